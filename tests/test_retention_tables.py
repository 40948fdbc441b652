from ctxbench.report.tables import dropped_by_layer, retention_breakdown, retention_tables


def summary(strategy, by_kind, by_age, dropped):
    return {
        "cell": {"strategy": strategy, "model": "m", "transcript": "t"},
        "metrics": {"retention_by_kind": by_kind, "retention_by_age_calls": by_age, "dropped": dropped},
    }


SUMMARIES = [
    summary("a", {"recall": 1.0, "decision": 0.0}, {"0-9": 1.0, "100+": 0.5, "10-49": 0.75}, []),
    summary("a", {"recall": 0.5}, {"0-9": 0.5}, [{"status": "lost", "layers": ["layer2"]}]),
    summary(
        "b",
        {"recall": 0.0},
        {},
        [{"status": "lost", "layers": ["layer2"]}, {"status": "recoverable", "layers": ["layer1"]}],
    ),
]


def test_breakdown_is_the_mean_over_transcripts_in_bucket_order():
    by_kind = retention_breakdown(SUMMARIES, "retention_by_kind")
    a = by_kind.set_index("strategy").loc["a"]
    assert a["recall"] == 0.75 and a["decision"] == 0.0
    by_age = retention_breakdown(SUMMARIES, "retention_by_age_calls")
    assert list(by_age.columns) == ["strategy", "model", "0-9", "10-49", "100+"]


def test_lost_facts_are_counted_by_layer_and_recoverable_ones_are_not():
    lost = dropped_by_layer(SUMMARIES)
    assert sorted(zip(lost.strategy, lost.layer, lost.facts_lost)) == [("a", "layer2", 1), ("b", "layer2", 1)]
    assert "Retention by probe type" in retention_tables(SUMMARIES)
