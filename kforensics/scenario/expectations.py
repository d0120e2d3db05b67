"""What a scenario expects (verdicts, consumer impact, transactions per Kafka version) and where that comes from."""

from __future__ import annotations

from typing import Any, Self


class Expectations:
    """The steps of :class:`~kforensics.scenario.builder.ScenarioBuilder` that declare expected results."""

    # set by the builder's __init__
    expected: dict[str, dict[int, list[str]]]
    expected_impact: dict[str, list[dict[str, Any]]]
    expected_transactions: dict[str, Any]
    citations: list[str]
    derivation: dict[str, Any]

    def expect_impact(self, kafka_version: str, rows: list[dict[str, Any]]) -> Self:
        """The consumer impact expected after the replay with ``kafka_version``'s rules (derived by hand)."""
        self.expected_impact[kafka_version] = rows
        return self

    def expect_transactions(self, partition: str, expected: dict[str, Any]) -> Self:
        """The transactions expected on a partition: ``"<topic>-<n>@broker-<id>"`` (one replica's log as written)
        or ``"<topic>-<n>@after-replay@<version>"`` (the new leader's after the replay, with the reopened ones)."""
        self.expected_transactions[partition] = expected
        return self

    def expect(self, kafka_version: str, verdicts: dict[int, list[str]]) -> Self:
        self.expected[kafka_version] = verdicts
        return self

    def cite(self, *sources: str) -> Self:
        """Where the expected verdicts come from (Kafka functions at release tags, docs sections)."""
        self.citations += sources
        return self

    def derive(self, **steps: Any) -> Self:
        """The hand derivation of the expected verdicts, per version mode or step."""
        self.derivation.update(steps)
        return self
