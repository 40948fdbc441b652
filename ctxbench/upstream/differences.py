"""Every deliberate difference between ctxbench's strategies and the upstream code they reproduce,
in one place, with its reason. The differential tests (tests/test_upstream_dbgpt.py) require
identical per-call prompts, token counts, states and status events wherever none of these apply,
and switch each one off (or steer around it) where it would.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Difference:
    what: str  # what differs
    why: str  # why ctxbench does it its way
    upstream_switch: str = ""  # how strategy=upstream_dbgpt (or the test) makes the two agree, if it can


DBGPT: tuple[Difference, ...] = (
    Difference(
        "Layer 3 never reaches the LLM upstream as shipped: manager.py passes model_name=self.model_name, "
        "an attribute ContextManager never sets, so every error-level call raises AttributeError, counts "
        "as a compaction failure, and the circuit breaker opens after three. ctxbench's dbgpt calls "
        "the summariser, as the seed describes.",
        "the seed's Layer 3 summarises; the upstream quirk is a bug, and a benchmark of 'DB-GPT with "
        "Layer 3' must be able to measure Layer 3",
        "strategy.params.set_model_name=true (the default) sets the attribute, and Layer 3 sends the same "
        "request on both sides (DB-GPT's [human]/[ai] lines, ctxbench.layers.llm_full_compression.render), "
        "so the two agree call by call after a summary too; false runs upstream exactly as shipped",
    ),
    Difference(
        "Function-calling transcripts: upstream knows only 'Observation:' text (DB-GPT's ReAct agents "
        "write tool results that way). ctxbench counts a tool message that ends its turn as an "
        "observation (it closes a round and Layer 1 may cut it); other results of a parallel batch "
        "stay whole.",
        "otherwise no round ever closes in a tool-calling transcript and Layers 1, 2 and 4 never act",
        "strategy.params.tool_results_as_observations=true (default) makes upstream's "
        "_is_observation_message accept such a tool message; false runs upstream unchanged",
    ),
    Difference(
        "Message text: upstream counts AgentMessage.content; for a function-calling assistant message "
        "ctxbench counts content + '\\n' + 'name arguments' per call (DbgptEstimator).",
        "in DB-GPT's ReAct prompts the action and its input are part of the content",
        "upstream_dbgpt gives upstream the same text (ctxbench.tokens.dbgpt.message_text)",
    ),
    Difference(
        "The budget: upstream uses max_context_tokens as configured (default 120000, non-positive "
        "falls back to it), and DB-GPT 0.8.2's agent passes a fixed 120,000 from AgentContext whatever "
        "the model; ctxbench plans against the smaller of it and the model's window.",
        "the seed sets context_length per deployment so the budget follows the model; a fixed 120000 on "
        "a 32k model is never reached, so only overflow errors (Layer 4) ever act",
        "strategy.params.follow_model_window=true (default, both strategies) configures upstream with "
        "the same number; strategy.params.follow_model_window=false runs both with the fixed setting, as "
        "DB-GPT's agent does",
    ),
    Difference(
        "truncated_observation_max_chars: the seed's TOML (and ctxbench's default) says 200; DB-GPT "
        "0.8.2's budget.py defaults to 500, and its agent passes only max_context_tokens, warning and "
        "error, so a DB-GPT agent cuts old observations to 500 characters.",
        "the seed is the specification; the agent's value is a reading of its own",
        "strategy.params.truncated_observation_max_chars=500 runs DB-GPT's agent value on both sides",
    ),
    Difference(
        "current_round: upstream is given the agent loop's retry counter; the replay passes the number "
        "of rounds in the history (what that counter is when every loop iteration is one round).",
        "the replay has no agent loop",
        "both sides use the number of rounds",
    ),
    Difference(
        "Layer 4 on a request it cannot shrink (no more rounds than it keeps): upstream retries the same "
        "request once more; ctxbench's dbgpt gives up without the second rejection.",
        "the retry would be rejected again: same tokens sent, one overflow error fewer",
        "upstream_dbgpt retries as DB-GPT does",
    ),
    Difference(
        "Snapshot pointers and the task-progress block are written by DB-GPT's agent (role.py, the ReAct "
        "prompt), not by the context package; ctxbench reproduces them (ToolResultSnapshots) for both "
        "strategies, with DB-GPT's paths ($DBGPT_HOME/workspace/op_snapshots/<conv_id>/step_NNN_x.json, "
        "DBGPT_HOME = /root/.dbgpt) and a timestamp derived from the step, not the clock. The block is "
        "DB-GPT's text byte for byte (role.py's task_progress_summary in react_agent.py's template, with "
        "the whole question; tests/test_dbgpt_snapshots.py renders DB-GPT's code to compare), appended to "
        "the transcript's system message once a step has succeeded; DB-GPT's question replaces the user "
        "message, here the transcript's task message stays as recorded.",
        "the context package needs what the agent feeds it; deterministic replays; a replay keeps the "
        "recorded messages",
        "the same prepare layer in both; task_progress_max_steps / task_max_chars shorten it on request",
    ),
)

# five_layer against OpenClaw (read, not run: TypeScript; reference.md 9). Each one has both readings.
OPENCLAW: tuple[Difference, ...] = (
    Difference(
        "Strategy 2's eligible results: OpenClaw's tool-result-context-guard.ts compacts every tool result; "
        "the seed names categories. ctxbench maps each call to them by what it does "
        "(ctxbench/layers/tool_actions.py) and compacts what it cannot place.",
        "the seed's Write/Create results are kept because later steps build on them",
        "strategy.params.compact_eligibility=all (OpenClaw's code), =by_name (the seed's names literally)",
    ),
    Difference(
        "The system prompt: OpenClaw's guard measures only its messages (the system prompt is passed "
        "beside them); ctxbench counts it in the 0.75 budget by default.",
        "measured on the dev set (docs/strategies.md): left out, more prompts went through that the "
        "provider then rejected",
        "strategy.params.system_in_budget=false",
    ),
    Difference(
        "The summary's kept tail: Pi's keepRecentTokens (20,000) as OpenClaw runs it; ctxbench caps it at "
        "what the prompt budget leaves after the head and the summary, over SAFETY_MARGIN 1.2.",
        "on windows under ~30k a 20,000-token tail keeps everything and the summary could never help",
        "strategy.params.keep_recent_tokens; summary_tail=messages keeps the prune's recent messages",
    ),
    Difference(
        "Beside the summary OpenClaw keeps only the system prompt (sent apart from the messages): Pi's "
        "prepareCompaction summarises everything before the kept tail, the task too. ctxbench does the same "
        "(and keeps pinned messages, the seed's rule); the seed's pruning keeps the first user message.",
        "on a 12k window OpenHands' task (715-1,342 tokens) beside its system prompt and tool schemas (4,571) left "
        "no room for the newest result",
        "strategy.params.summary_head=task keeps the first user message beside the summary",
    ),
    Difference(
        "After compaction OpenClaw's overflow recovery truncates tool results to 0.3 of the window at 4 "
        "chars/token (each, and all together newest first); ctxbench cuts them, newest first, until its "
        "estimate of the prompt fits the prompt budget over SAFETY_MARGIN 1.2 (and over the ratio of the "
        "provider's count of a rejected prompt of the call to its estimate).",
        "after strategy 1 no result is over 0.3 x 4 x window chars, so OpenClaw's rule can only act on the "
        "total; with a 4,096-token reply reserve a small window's newest result alone may not fit",
        "strategy.params.fit_tool_results=openclaw (OpenClaw's numbers), =none (nothing cut)",
    ),
    Difference(
        "Retries after an overflow: OpenClaw's MAX_OVERFLOW_COMPACTION_ATTEMPTS is 3; the seed says up to "
        "5 LLM call retries, ctxbench's default.",
        "the seed is the specification",
        "strategy.params.max_retries=3",
    ),
    Difference(
        "Chunks: OpenClaw's summarizeInStages summarises chunks in sequence, each on the previous summary; "
        "ctxbench summarises each chunk and merges them in one more call (the seed's 'summarized "
        "separately and then merged').",
        "the seed's wording",
        "",
    ),
)
