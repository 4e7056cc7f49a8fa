"""Domain summaries for ``GET /?verbose=1`` (hsstat, File.num_objects...)."""

from __future__ import annotations

from h5lake.chunks.stats import dataset_chunk_totals
from h5lake.model.ids import Collection
from h5lake.service.context import Service
from h5lake.service.documents import Doc, dumps
from h5lake.service.views import Domain
from h5lake.service.walk import walk_objects


async def domain_stats(svc: Service, domain: Domain) -> Doc:
    counts = {"g": 0, "d": 0, "t": 0, "m": 0}
    metadata_bytes = 0
    last = domain.doc.get("lastModified", 0.0)
    datasets: list[Doc] = []
    async for doc in walk_objects(svc, domain):
        counts[doc["id"][0]] += 1
        metadata_bytes += len(dumps(doc))
        last = max(last, doc.get("lastModified", 0.0))
        if Collection.of(doc["id"]) is Collection.DATASETS:
            datasets.append(doc)
    num_chunks, allocated, linked_chunks, linked_bytes = await dataset_chunk_totals(svc.store, domain.path, datasets)
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
