"""View or rewrite: DB-GPT compacts a per-call copy of its whole history (the history itself is never
rewritten), Claude Code / OpenClaw rewrite theirs. The engine must replay each as its system runs."""

from ctxbench.build import build_estimator, build_model, build_strategy
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ModelSpec
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.tokenizers import get_tokenizer
from tests.test_strategy_dbgpt import composed, react_transcript


class Prompts:
    """Records every prompt sent (the list the provider counted last for each call)."""

    def __init__(self) -> None:
        self.sent: list[list] = []

    def on_call(self, record, working, ctx) -> None:
        self.sent.append(list(working))


def _dbgpt(*overrides: str):
    cfg = composed("model=gpt-4-32k", "strategy.params.max_context_tokens=null", *overrides)
    return cfg, build_model(cfg)


def test_dbgpt_compacts_a_per_call_view_of_the_whole_history():
    """The issue's case: 120 rounds on a 32k model (budget 28,672). Each call's prompt must be what
    DB-GPT's layers make of the whole history, not of the previous call's compacted prompt."""
    transcript = react_transcript(rounds=120, tid="react120")
    cfg, model = _dbgpt()
    prompts = Prompts()
    result = replay(
        transcript,
        build_strategy(cfg),
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer(model.tokenizer)),
        observers=[prompts],
    )
    assert result.summary["layers"].get("layer2", 0) > 50

    # The reference: before every call, a strategy rebuilt from scratch (no state carried over)
    # compacts the full history, prepared (snapshots, task progress) as DB-GPT's memory holds it.
    preparer = build_strategy(cfg)
    history: list = []
    start = 0
    counter = TokenCounter(get_tokenizer(model.tokenizer))
    for call, at in enumerate(transcript.call_indices):
        new = transcript.messages[start:at]
        history.extend(new)
        ctx = StrategyContext(model=model, estimator=build_estimator(cfg), transcript=transcript, new_messages=new)
        ctx.call_index = call
        history = preparer.prepare(history, ctx)
        expected = build_strategy(cfg).before_call(list(history), ctx)
        sent = prompts.sent[call]
        assert [m.content for m in sent] == [m.content for m in expected], call
        assert result.calls[call]["tokens_sent"] == counter.prompt(expected), call
        history.append(transcript.messages[at])
        start = at + 1
    # DB-GPT holds a steady prompt once compaction starts: no saw-tooth up to the budget.
    late = [c["tokens_sent"] for c in result.calls[40:]]
    assert max(late) < 0.6 * 28672, max(late)


def test_rewrite_strategies_start_from_their_compacted_context():
    """five_layer rewrites: a later call's prompt starts from the earlier call's pruned context."""
    cfg = composed("strategy=five_layer", "model=gpt-4-32k")
    strategy = build_strategy(cfg)
    assert strategy.compaction == "rewrite" and build_strategy(composed()).compaction == "view"
    model = ModelSpec(name="gpt-4-32k", context_window=32768, tokenizer="cl100k_base")
    transcript = react_transcript(rounds=60, tid="react60")
    result = replay(transcript, strategy, build_estimator(cfg), model, TokenCounter(get_tokenizer("cl100k_base")))
    pruned = [c["call"] for c in result.calls if c["layers"]]
    assert pruned
    # After the first prune the prompt stays below the full history for the rest of the replay.
    assert all(c["tokens_sent"] < c["tokens_uncompacted"] for c in result.calls[pruned[0] :])
