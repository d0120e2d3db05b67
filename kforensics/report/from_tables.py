"""The report of Parquet tables (``scan --out`` or ``spark --out``): the fleet view first, then the same sections
as a replay's report, each from its table.

``scan --out`` writes ``DIR/<table>.parquet``; ``spark --out`` writes
``DIR/<table>/`` directories of parts whose rows keep their cluster and
topic.  A table that is absent gives its section a sentence saying so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..plots_fleet import NO_CLUSTER
from ..severity import Severity
from ..verdict_rules import fails_replay
from .model import Section, count, ranges_text
from .table_sections import (
    consumers_section,
    elections_section,
    evidence_section,
    findings_section,
    forks_section,
    restart_section,
    transactions_section,
    verdicts_section,
)
from .tables_data import Tables, load_tables

__all__ = ["BUILDERS", "Tables", "load_tables", "table_sections"]

#: worst partitions listed in the fleet section
WORST = 50


def fleet_section(t: Tables) -> Section:
    """Records and partitions lost or at risk by cluster × topic, when they were written, the worst partitions
    and the consumer groups affected by topic."""
    from .. import plots
    from .figures import svg_figure

    s = Section("fleet", "Fleet: losses by cluster and topic")
    v = t.get("verdicts")
    if v.empty:
        s.text("No verdicts table (a `scan --out`): nothing was replayed; see what a restart will do below.")
        return s
    s.blocks.append(svg_figure(plots.fleet_heatmap(v), "Records lost by topic and cluster (the topics and "
                               "clusters losing most by name, the rest as others); the bars: partitions losing "
                               "records and partitions at risk per topic row"))
    if t.lost_batches is not None and not t.lost_batches.empty:
        s.blocks.append(svg_figure(plots.loss_times(t.lost_batches), "When the lost records were written "
                                   "(each lost batch's max timestamp, UTC)"))
    parts = plots.fleet_partitions_frame(v)
    worst = parts[(parts["records_lost"] > 0) | parts["at_risk"] | (parts["worst_verdict"] != "OK")]
    s.table(["cluster", "partition", "worst verdict", "records lost", "committed lost", "offsets lost", "at risk",
             "leader", "brokers"],
            [[r.cluster, f"{r.topic}-{r.partition}", r.worst_verdict, int(r.records_lost), int(r.committed_lost),
              ranges_text(r.offsets_lost), bool(r.at_risk), r.leader, r.brokers]
             for r in worst.itertuples()], caption="The worst partitions first (the first ones in detail in the "
                                                   "sections that follow; every replica's verdicts: Verdicts by "
                                                   "partition below)", limit=WORST,
            what="partitions")
    g = plots.groups_by_topic_frame(t.get("consumer_impact"))
    s.table(["cluster", "topic", "groups", "partitions", "records consumed and lost", "on resume (groups)"],
            [[r.cluster, r.topic, r.groups, int(r.partitions), int(r.consumed_lost_records), r.outcomes]
             for r in g.itertuples()], caption="Consumer groups affected, by topic", limit=WORST, what="topics")
    return s


def summary_section(t: Tables) -> Section:
    """The fleet's answer first: partitions and records lost, at risk, groups affected, findings by severity."""
    from .. import plots

    s = Section("summary", "Summary")
    v = t.get("verdicts")
    parts = plots.fleet_partitions_frame(v)
    f = t.get("findings")
    ci = t.get("consumer_impact")
    clusters = sorted({str(c) for c in v["cluster"].fillna(NO_CLUSTER)}) if not v.empty else []
    lost = parts[parts["records_lost"] > 0]
    groups = 0 if ci.empty else ci[["cluster", "group"]].drop_duplicates().shape[0]
    if v.empty:
        brokers = t.get("files")["broker_id"].nunique() if not t.get("files").empty else 0
        s.text(f"Scan tables of {count(brokers, 'broker')}: no replay (what each broker's next start cuts: What a "
               "restart will do).")
    else:
        s.text(f"{len(parts)} partitions replayed in {len(clusters)} clusters. {len(lost)} partitions lose "
               f"{int(lost['records_lost'].sum())} records the new leader does not serve, "
               f"{int(lost['committed_lost'].sum())} of them below the committed bound; "
               f"{int(parts['at_risk'].sum())} partitions at risk; {groups} consumer groups affected.")
    counts = Counter(f["severity"]) if not f.empty else Counter()
    s.table(["severity", "findings"], [[str(sev), int(counts.get(str(sev), 0))] for sev in Severity.worst_first()],
            caption="Findings by severity")
    by_verdict = Counter(v["verdict"]) if not v.empty else Counter()
    s.table(["verdict", "replicas"], [[c, int(n)] for c, n in sorted(by_verdict.items())],
            caption="Replicas by verdict")
    return s


#: the sections of a tables report, in order
BUILDERS: list[Callable[[Tables], Section]] = [
    summary_section, fleet_section, evidence_section, elections_section, verdicts_section, forks_section,
    consumers_section, transactions_section, restart_section, findings_section]


def table_sections(t: Tables) -> tuple[list[Section], bool]:
    """Every section, and whether the verdicts and impact findings would fail a replay."""
    v, f = t.get("verdicts"), t.get("findings")
    failing = fails_replay(list(v["verdict"]) if not v.empty else [], list(f["code"]) if not f.empty else [])
    sections = [b(t) for b in BUILDERS]
    if not v.empty:
        from .. import plots
        from .drill_down import drill_sections

        parts = plots.fleet_partitions_frame(v)
        worst = parts[(parts["records_lost"] > 0) | parts["at_risk"] | (parts["worst_verdict"] != "OK")]
        at = next(i for i, x in enumerate(sections) if x.id == "fleet") + 1
        sections[at:at] = drill_sections(v, worst)
    return sections, failing


