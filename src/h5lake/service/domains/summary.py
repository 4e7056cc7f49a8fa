"""Domain summaries for ``GET /?verbose=1`` (hsstat, File.num_objects...)."""

from __future__ import annotations

from h5lake.catalog.changed import last_changed
from h5lake.catalog.totals import dataset_chunk_totals, map_bucket_bytes
from h5lake.model.ids import Collection
from h5lake.model.stored import DatasetDoc, as_dataset
from h5lake.service.context import Service
from h5lake.service.documents import Doc, dumps
from h5lake.service.views import Domain
from h5lake.service.walk import walk_objects


async def domain_stats(svc: Service, domain: Domain) -> Doc:
    counts = {"g": 0, "d": 0, "t": 0, "m": 0}
    metadata_bytes = 0
    last = domain.doc.get("lastModified", 0.0)
    datasets: list[DatasetDoc] = []
    maps: list[str] = []
    async for doc in walk_objects(svc, domain):
        counts[doc["id"][0]] += 1
        metadata_bytes += len(dumps(doc))
        last = max(last, doc.get("lastModified", 0.0))
        if Collection.of(doc["id"]) is Collection.DATASETS:
            datasets.append(as_dataset(doc))
        elif Collection.of(doc["id"]) is Collection.MAPS:
            maps.append(doc["id"])
    num_chunks, allocated, linked_chunks, linked_bytes = await dataset_chunk_totals(svc.store, domain.path, datasets)
    # a map's pairs are chunk objects too (its buckets): they count in the allocated bytes
    allocated += await map_bucket_bytes(svc.store, domain.path, maps)
    # values, attributes and links written leave the documents they are not part of alone
    last = max(last, await last_changed(svc.store, domain.path) or 0.0)
    # HSDS answers the summary of its last scan as ``scan_info`` too; the HDF5 REST VOL
    # connector's H5Fget_filesize reads ``scan_info.allocated_bytes``
    scan = {
        "allocated_bytes": allocated,
        "metadata_bytes": metadata_bytes,
        "linked_bytes": linked_bytes,
        "num_chunks": num_chunks,
        "num_linked_chunks": linked_chunks,
        "num_groups": counts["g"],
        "num_datatypes": counts["t"],
        "lastModified": last,
        "md5_sum": "",
    }
    return {
        "num_objects": counts["g"] + counts["d"] + counts["t"],
        "num_groups": counts["g"],
        "num_datasets": counts["d"],
        "num_datatypes": counts["t"],
        "num_maps": counts["m"],
        "num_chunks": num_chunks,
        "num_linked_chunks": linked_chunks,
        "allocated_bytes": allocated,
        "metadata_bytes": metadata_bytes,
        "linked_bytes": linked_bytes,
        "total_size": allocated + metadata_bytes,
        "lastModified": last,
        "md5_sum": "",
        "scan_info": scan,
    }
