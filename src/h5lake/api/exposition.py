"""The text of a ``/metrics`` scrape (`api/metrics.py` counts): every worker's values, without
the series made at start-up that nothing has counted yet, and the store's record of ``h5lake gc``
runs.

`api/metrics.prepare` makes, when a worker starts, prometheus-client's values for every route
template and method, the usual statuses, and every storage operation and outcome, so that no
request pays for making them (a histogram's values: ~0.45 ms of CPU with several processes).
Shown at zero they would fill a scrape with thousands of series nobody asked for, so `Counted`
leaves out a labelled series of those metrics whose count is 0: a scrape shows what it showed
when the values were made on first use.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from prometheus_client import REGISTRY as DEFAULT_REGISTRY
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from h5lake.versions.gc import GcRecord

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: Metrics whose series `api/metrics.prepare` makes ahead (by family name): a series of theirs
#: is shown once its count (a counter's total, a histogram's ``_count``) is above zero.
PREPARED = frozenset({
    "h5lake_http_requests", "h5lake_http_request_duration_seconds", "h5lake_storage_operations",
    "h5lake_storage_operation_duration_seconds", "h5lake_storage_bytes", "h5lake_version_operations",
    "h5lake_map_operations",
})


def exposition(gc_record: GcRecord | None = None) -> bytes:
    """The text of a scrape: every process's values when in multiprocess mode, else this one's;
    and the store's record of ``h5lake gc`` runs when one was read."""
    folder = os.environ.get(MULTIPROC_ENV)
    if folder:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=folder)
    else:
        registry = DEFAULT_REGISTRY
    text = generate_latest(Counted(registry))
    if gc_record is not None:
        extra = CollectorRegistry()
        extra.register(_GcCollector(gc_record))
        text += generate_latest(extra)
    return text


class Counted(Collector):
    """The families of ``source``, those of `PREPARED` without their series counted zero times."""

    def __init__(self, source: Collector) -> None:
        self.source = source

    def collect(self) -> Iterable[Metric]:
        for family in self.source.collect():
            if family.name in PREPARED:
                family = counted(family)
                if not family.samples:
                    continue
            yield family


def counted(family: Metric) -> Metric:
    """``family`` without the series (a label set, its histogram buckets counted as one) whose
    count is zero."""
    count_name = family.name + ("_count" if family.type == "histogram" else "_total")
    empty = {
        tuple(sorted(s.labels.items())) for s in family.samples if s.name == count_name and s.value == 0
    }
    if not empty:
        return family
    shown = Metric(family.name, family.documentation, family.type, family.unit)
    shown.samples = [
        s for s in family.samples
        if tuple(sorted((k, v) for k, v in s.labels.items() if k != "le")) not in empty
    ]
    return shown


class _GcCollector(Collector):
    """The store's record of ``h5lake gc`` runs (`versions/gc.GcRecord`) as it was at the scrape:
    it is the store's, not a process's, so it is read, not summed over workers."""

    def __init__(self, record: GcRecord) -> None:
        self.record = record

    def collect(self) -> Iterable[Metric]:
        r = self.record
        yield CounterMetricFamily("h5lake_gc_runs", "h5lake gc runs that deleted (not --dry-run)", value=r.runs)
        yield CounterMetricFamily("h5lake_gc_reclaimed_objects", "Chunks and manifests h5lake gc deleted", value=r.objects)
        yield CounterMetricFamily("h5lake_gc_reclaimed_bytes", "Bytes h5lake gc deleted", value=r.bytes)
        yield GaugeMetricFamily(
            "h5lake_gc_last_run_timestamp_seconds", "When the last h5lake gc run that deleted ended (0: none)",
            value=r.last_finished,
        )
        yield GaugeMetricFamily("h5lake_gc_last_run_duration_seconds", "How long it took", value=r.last_seconds)
        yield GaugeMetricFamily("h5lake_gc_last_run_reclaimed_bytes", "Bytes it deleted", value=r.last_bytes)
