"""DB-GPT tool-result snapshots and the task-progress block.

When an action succeeds (an ``Observation:`` message or a tool result arrives in
``ctx.new_messages``), DB-GPT writes the whole operation to a JSON file
``step_003_sql_query.json`` (step zero-padded to 3, then the action) with step, action,
phase, action_intention, action_reason, thought, action_input, observation, timestamp,
conv_id, and the prompt keeps ``\\n[Full detail available at: <path>]`` after the
observation. The path is also kept in ``metadata["snapshot"]`` so Layer 1 keeps the
pointer when it truncates.

Here the records go, under the same paths (``op_snapshots/step_003_sql_query.json``), into
one line each of ``<cell>/op_snapshots.jsonl``, named after the folder, written when the cell
is published (``write_files``; see ``ctxbench.layers.snapshot_store`` for why not a file each,
and why not during the replay). Nothing is kept when ``ctx.workdir`` is None; the prompt text
is the same. The pointer is relative to the cell
folder, so token counts do not depend on where results are stored. Timestamps are derived
from the step (or the transcript's own timestamp), never from the clock, so runs reproduce.

The task-progress block (``task_progress: true``) is what DB-GPT 0.8.2's ReAct system prompt
carries, in DB-GPT's words: ``Role.task_progress_summary`` (role.py) -- the title ``## Task Progress
(do NOT repeat completed steps)`` and every step as ``✅ Step N: Action=... | Intention: ... |
Phase: ... | ref: <snapshot file>`` -- rendered into ``_REACT_SYSTEM_TEMPLATE`` (react_agent.py) with
its two instructions, then ``Please Solve this task:`` and the whole question
(tests/test_dbgpt_snapshots.py compares it byte for byte with DB-GPT's own code). Layers 2 and 4
drop old rounds and rely on it. It goes at the end of the first system message, after a newline
(a system message is added when the transcript has none), once the first step has succeeded (DB-GPT
renders the progress only when there is some; before that the task is the transcript's own user
message). ``progress_max_steps`` / ``task_max_chars`` shorten it on request (0, the default: every
step and the whole question, as DB-GPT).

Runs as a ``prepare`` layer of the pipeline: it rewrites what arrived, it is not compaction.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.snapshot_store import SnapshotStore, StoredSnapshots
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import is_observation
from ctxbench.transcripts.running import DerivedList

FOLDER = "op_snapshots"
POINTER = "\n[Full detail available at: {path}]"
PROGRESS_TITLE = "## Task Progress (do NOT repeat completed steps)"  # role.py
# react_agent.py's _REACT_SYSTEM_TEMPLATE after {{ task_progress }}, up to {{ question }}:
PROGRESS_FOOTER = (
    "You MUST NOT repeat any action already listed above as ✅ completed.\n"
    "Pick the NEXT action that has NOT been done yet to make progress toward the final goal.\n"
    "\nPlease Solve this task:\n"
)
PROGRESS_BASE_KEY = "task_progress_base"
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
MAX_STEP_TIMES = 1 << 16  # step timestamps kept (a few MB at most); later steps are made each time
_FIELDS = {
    "thought": "Thought",
    "phase": "Phase",
    "action_intention": "Action Intention",
    "action_reason": "Action Reason",
    "action": "Action",
    "action_input": "Action Input",
}
_LABELS = "|".join(re.escape(label) for label in sorted(_FIELDS.values(), key=len, reverse=True))
_REACT_FIELD = re.compile(rf"^\s*({_LABELS}|Observation)\s*:\s?", re.MULTILINE)
_BY_LABEL = {label: key for key, label in _FIELDS.items()}
# Steps' timestamps when the transcript has none (EPOCH + step seconds), made once per step number
# for all the cells of a process: a datetime sum and isoformat per snapshot otherwise.
_STEP_TIMES: list[str] = []
_NO_FIELDS = dict.fromkeys(_FIELDS, "")
_SAFE_NAMES: dict[str, str] = {}  # action -> its file-name part (a conversation repeats a few actions)


def react_fields(text: str) -> dict[str, str]:
    """The ReAct fields of an assistant message (``Thought: ...``, ``Action: ...``, ...)."""
    found: dict[str, str] = {}
    # Every label holds one of these words: a message with none of them (a tool-calling reply) has
    # no field, found by substring searches in C instead of the regex tried at every character.
    if "Action" not in text and "Thought" not in text and "Phase" not in text and "Observation" not in text:
        return found
    by_label = _BY_LABEL
    matches = list(_REACT_FIELD.finditer(text))
    for n, match in enumerate(matches):
        end = matches[n + 1].start() if n + 1 < len(matches) else len(text)
        key = by_label.get(match.group(1))
        if key and key not in found:
            found[key] = text[match.end() : end].strip()
    return found


def step_time(step: int) -> str:
    """The timestamp of step ``step`` in a transcript without recorded times: ``EPOCH`` + step seconds."""
    times = _STEP_TIMES
    if step >= len(times):
        if step >= MAX_STEP_TIMES:
            return (EPOCH + timedelta(seconds=step)).isoformat()
        times.extend((EPOCH + timedelta(seconds=n)).isoformat() for n in range(len(times), step + 1))
    return times[step]


def file_name(step: int, action: str) -> str:
    """DB-GPT's name (role.py): every character but letters, digits, - and _ becomes _, one for one."""
    safe = _SAFE_NAMES.get(action)
    if safe is None:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in action) or "action"
        if len(_SAFE_NAMES) >= 4096:  # bounded: a transcript may hold many distinct actions
            _SAFE_NAMES.clear()
        _SAFE_NAMES[action] = safe
    return f"step_{step:03d}_{safe}.json"


class ToolResultSnapshots(Layer):
    def __init__(
        self,
        enabled: Annotated[bool, Param("write each tool result's snapshot and point to it from the prompt")] = True,
        task_progress: Annotated[bool, Param("keep DB-GPT's task-progress block in the system message")] = True,
        task_max_chars: Annotated[
            int, Param("characters of the question quoted in the progress block (0: all)", ge=0)
        ] = 0,
        progress_max_steps: Annotated[int, Param("progress lines shown, the most recent (0: all)", ge=0)] = 0,
        folder: Annotated[str, Param("the cell's snapshot folder, named in op_snapshots.jsonl", folder=True)] = FOLDER,
        pointer_dir: Annotated[
            str | None, Param("the folder the prompt's pointers name, as DB-GPT writes it (None: folder)")
        ] = None,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "snapshots",
    ) -> None:
        self.enabled = enabled
        self.task_progress = task_progress
        self.task_max_chars = int(task_max_chars)
        self.progress_max_steps = int(progress_max_steps)
        self.folder = folder
        # Where DB-GPT would have written the files: pointers are "<pointer_dir>/<conv_id>/<file>",
        # as DB-GPT writes them (None: "<folder>/<file>", relative to the cell).
        self.pointer_dir = pointer_dir.rstrip("/") if pointer_dir else None
        self.name = name
        self.step = 0  # successful actions so far; the strategy (and this layer) serves one conversation
        self.progress: list[str] = []  # per completed step "\n✅ Step 3: Action=x | ... | ref: file" (role.py)
        self._store = SnapshotStore(folder)  # the records, written to the cell when it is published
        self._head: tuple[Message, Message] | None = None  # (system message, it + the block's fixed head)
        self._block_head: tuple[Any, str] | None = None  # (transcript, the block's tail: footer, question)
        # (first step shown, steps joined, their text): the steps' text grows by its new lines
        # instead of being joined again from every line at every step.
        self._steps: tuple[int, int, str] = (0, 0, "")

    def snapshots(self, workdir: Path | None) -> StoredSnapshots | None:
        """The cell's snapshots, for the judge to follow this layer's pointers."""
        return StoredSnapshots(workdir, memory=self._store) if self.enabled and workdir is not None else None

    def write_files(self, workdir: Path) -> None:
        """Write the snapshot store into the cell's folder (the cell is being published)."""
        if len(self._store):
            workdir.mkdir(parents=True, exist_ok=True)
            self._store.write(workdir)

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        if not self.enabled:
            return messages
        arrived = {id(m) for m in ctx.new_messages}
        pointed: list[tuple[int, Message]] = []  # (position, the observation with its pointer)
        # What arrived was appended at the end: a view strategy's history is not walked again.
        for i in range(max(0, len(messages) - len(arrived)), len(messages)):
            message = messages[i]
            if id(message) not in arrived or not _is_success(message):
                continue
            pointer = self._snapshot(messages, i, ctx)
            metadata = {**message.metadata, "snapshot": pointer}
            pointed.append((i, message.with_appended(POINTER.format(path=pointer), metadata=metadata)))
        if not pointed:
            return messages
        replaced = [i for i, _ in pointed]
        system = next((i for i, m in enumerate(messages) if m.role == "system"), None) if self.task_progress else None
        if self.task_progress and system is None:  # a system message is put first: every position moves
            out = list(messages)
            for i, message in pointed:
                out[i] = message
            self._with_progress(out, ctx)
            return out
        if system is not None:
            replaced = sorted({system, *replaced})
        # The replay sizes this history again right away (status, Layer 1): say what changed. The
        # history is copied once, into the noted list (a view strategy's whole history, every call).
        derived = DerivedList(messages, messages, replaced)
        for i, message in pointed:
            derived[i] = message
        if system is not None:
            self._with_progress(derived, ctx)
        return derived

    # --- snapshots -------------------------------------------------------------------
    def _snapshot(self, messages: list[Message], i: int, ctx: StrategyContext) -> str:
        observation = messages[i]
        self.step += 1
        record = {"step": self.step, **_action_of(messages, i)}
        name = file_name(self.step, record["action"] or "observation")
        record["observation"] = observation.content
        record["timestamp"] = str(observation.metadata.get("timestamp") or step_time(self.step))
        record["conv_id"] = ctx.transcript.id
        if self.pointer_dir:
            conv = ctx.transcript.id
            pointer = f"{self.pointer_dir}/{conv}/{name}" if conv else f"{self.pointer_dir}/{name}"
        else:
            pointer = f"{self.folder}/{name}"
        if ctx.workdir is not None:
            self._store.add(pointer, record)
        line = f"\n✅ Step {self.step}: Action={record['action']}"
        if record.get("action_intention"):
            line += f" | Intention: {record['action_intention']}"
        if record.get("phase"):
            line += f" | Phase: {record['phase']}"
        self.progress.append(f"{line} | ref: {name}")  # DB-GPT: os.path.basename(snapshot_file)
        return pointer

    # --- task progress ---------------------------------------------------------------
    def _with_progress(self, messages: list[Message], ctx: StrategyContext) -> int | None:
        """Put the progress block into ``messages``' first system message, in place; returns its
        position, or None when there was none and one was put first."""
        notice, start, tail = self._progress_block(ctx)
        rest = f"{notice}{self._steps_text(start)}{tail}"
        # DB-GPT's estimator sums the block's count from its lines' (each counted once).
        count = getattr(ctx.estimator, "count_progress_block", None)
        for i, message in enumerate(messages):
            if message.role == "system":
                base = _progress_base(message)
                # The block's head (title, task) never changes: appended once and kept, so each
                # step a tokenizer counts only the step lines that follow it.
                if self._head is None or self._head[0] is not base:
                    # after the system text and a newline, as the template's "Observation: ...\n" line
                    self._head = (base, base.with_appended(f"\n\n{PROGRESS_TITLE}" if base.content else PROGRESS_TITLE))
                metadata = {**message.metadata, PROGRESS_BASE_KEY: base.content}
                head = self._head[1]
                messages[i] = head.with_appended(rest, metadata=metadata, pinned=message.pinned)
                if count is not None:
                    count(messages[i], head.content, self.progress, start, tail, notice)
                return i
        empty = Message(role="system", content="")
        system = empty.with_appended(PROGRESS_TITLE).with_appended(rest, metadata={PROGRESS_BASE_KEY: ""})
        if count is not None:
            count(system, PROGRESS_TITLE, self.progress, start, tail, notice)
        messages.insert(0, system)
        return None

    def _steps_text(self, start: int) -> str:
        """``"".join(self.progress[start:])``, from the last step's text and the lines added since."""
        first, joined, text = self._steps
        if first != start or joined > len(self.progress):
            first, joined, text = start, start, ""
        if joined < len(self.progress):
            text += "".join(self.progress[joined:])  # a slice: islice would touch every line before
            self._steps = (first, len(self.progress), text)
        return text

    def _progress_block(self, ctx: StrategyContext) -> tuple[str, int, str]:
        """The progress block after its fixed head (the title), as the notice of the steps left out
        ("" when none), the first step shown (a position in ``progress``; the steps follow, each
        after a newline) and the tail: the template's instructions and the question, after a newline."""
        if self._block_head is None or self._block_head[0] is not ctx.transcript:
            task = _first_task(ctx)
            if self.task_max_chars > 0 and len(task) > self.task_max_chars:
                task = task[: self.task_max_chars] + " ..."
            self._block_head = (ctx.transcript, f"\n{PROGRESS_FOOTER}{task}")  # the same every step
        start = max(0, len(self.progress) - self.progress_max_steps) if self.progress_max_steps > 0 else 0
        notice = f"\n({start} earlier steps, snapshots in {self.folder}/)" if start else ""
        return notice, start, self._block_head[1]


def _progress_base(system: Message) -> Message:
    """The system message without the progress block (built from appended text, so a
    tokenizer counts only the block's changed lines)."""
    if PROGRESS_BASE_KEY not in system.metadata:
        return system
    text = system.metadata[PROGRESS_BASE_KEY]
    earlier = system.appended_to
    while earlier is not None and earlier.content != text:
        earlier = earlier.appended_to
    return earlier if earlier is not None else system.replace(content=text)


def _is_success(message: Message) -> bool:
    """An action result that succeeded: tool results not flagged as errors, and observations."""
    if message.role == "tool":
        return not (message.metadata.get("is_error") or message.metadata.get("error"))
    return is_observation(message)


def _action_of(messages: list[Message], i: int) -> dict[str, Any]:
    """The fields of the action that produced observation ``i``, from the assistant message before it."""
    observation = messages[i]
    for j in range(i - 1, -1, -1):
        assistant = messages[j]
        if assistant.role != "assistant":
            continue
        fields = _NO_FIELDS.copy()
        fields.update(react_fields(assistant.content))
        call = next((c for c in assistant.tool_calls if c.id == observation.tool_call_id), None)
        if call is not None:
            fields["action"], fields["action_input"] = call.name, call.arguments
            fields["thought"] = fields["thought"] or assistant.content.strip()
        elif observation.role == "tool" and observation.name:
            fields["action"] = observation.name
        return fields
    return _NO_FIELDS | {"action": observation.name or ""}


def _first_task(ctx: StrategyContext) -> str:
    """The task: the transcript's first user message that is not an observation, as it is (DB-GPT's
    question is the received message's content)."""
    for message in ctx.transcript.messages:
        if message.role == "user" and not is_observation(message):
            return message.content
    return ""
