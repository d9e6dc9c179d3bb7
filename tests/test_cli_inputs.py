"""What a command reads is never what it writes; every path a user gives is checked once, the same
way; every numeric option is bounded. Each case is one line and exit 2, before any work."""

import os
import shutil
from pathlib import Path

import pytest
from conftest import HEADER, one_line_error, run_cli

from albert_lab.errors import AlbertLabError


@pytest.fixture
def ckpts(shipped, tmp_path) -> Path:
    """Writable copies of the shipped test checkpoints (a wrong write must be seen, not the session's copy harmed)."""
    out = tmp_path / "ckpts"
    shutil.copytree(shipped, out)
    return out


@pytest.fixture
def text_file(tmp_path) -> Path:
    (path := tmp_path / "t.txt").write_text("The river flows through the old town. Its bridges are old.\n")
    return path


def _unchanged(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_an_output_that_is_one_of_the_commands_inputs_is_refused_before_the_work(ckpts, text_file, pairs_file, tmp_path):
    """--maps-out t.txt overwrote the text; --maps-out .../model.safetensors overwrote shipped weights with CSV;
    score --out .../config.json overwrote a config."""
    sop, nsp = ckpts / "albert-sop", ckpts / "bert-nsp"
    before, text = {"sop": _unchanged(sop), "nsp": _unchanged(nsp)}, text_file.read_bytes()
    one_line_error(run_cli("attention", "--checkpoint", str(sop), "--file", str(text_file), "--maps-out", str(text_file)),
                   "--maps-out", "is an input of this command (--file)")
    one_line_error(run_cli("attention", "--checkpoint", str(sop), "--maps-out", str(sop / "model.safetensors")),
                   "--maps-out", "lies inside an input of this command (--checkpoint")
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(sop), "--checkpoint", str(nsp),
                           "--out", str(nsp / "config.json")), "--out", "inside an input")
    one_line_error(run_cli("fit-head", "--checkpoint", str(sop), "--out", str(sop / "probe")), "--out", "inside an input")
    by_name = {"ALBERT_LAB_CHECKPOINTS": str(ckpts)}  # as the issue ran them: checkpoints named, outputs inside them
    one_line_error(run_cli("attention", "--checkpoint", "albert-sop", "--maps-out", str(sop / "model.safetensors"),
                           env=by_name), "--maps-out", "lies inside an input of this command (--checkpoint")
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", "albert-sop", "--checkpoint", "bert-nsp",
                           "--out", str(nsp / "config.json"), env=by_name), "--out", "inside an input")
    assert text_file.read_bytes() == text and _unchanged(sop) == before["sop"] and _unchanged(nsp) == before["nsp"]
    assert not (sop / "probe").exists()


def test_an_output_that_is_a_hard_link_of_an_input_is_refused(ckpts, text_file, pairs_file, tmp_path):
    """score --out onto a hard link of the pairs file, and attention --maps-out onto a hard link of
    --file or of a checkpoint's weights, exited 0 with the input overwritten."""
    sop = ckpts / "albert-sop"
    before, text, pairs = _unchanged(sop), text_file.read_bytes(), pairs_file.read_bytes()
    os.link(pairs_file, linked_pairs := tmp_path / "pairs-link.csv")
    os.link(text_file, linked_text := tmp_path / "t-link.txt")
    os.link(sop / "model.safetensors", linked_weights := tmp_path / "w.csv")
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(sop), "--out", str(linked_pairs)),
                   "--out", "the same file as an input of this command (the pairs file", "hard link")
    one_line_error(run_cli("attention", "--checkpoint", str(sop), "--file", str(text_file), "--maps-out", str(linked_text)),
                   "--maps-out", "the same file as an input of this command (--file")
    one_line_error(run_cli("attention", "--checkpoint", str(sop), "--maps-out", str(linked_weights)),
                   "--maps-out", "the same file as an input of this command (--checkpoint")
    assert text_file.read_bytes() == text and pairs_file.read_bytes() == pairs and _unchanged(sop) == before


def test_an_output_is_renamed_into_place_never_written_through_another_name(shipped, pairs_file, tmp_path):
    """A file sharing its data with --out (a hard link the checks cannot know of) keeps its bytes:
    the result is written beside --out and renamed over it."""
    (outputs := tmp_path / "outputs").mkdir()
    (out := outputs / "scores.csv").write_text("old\n")
    os.link(out, other := outputs / "kept.csv")
    result = run_cli("score", str(pairs_file), "--checkpoint", str(shipped / "albert-sop"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert other.read_text() == "old\n" and "sentence_a" in out.read_text().splitlines()[0]
    assert sorted(p.name for p in outputs.iterdir()) == ["kept.csv", "scores.csv"]  # no temporary file left


def test_albertize_never_writes_into_the_bert_it_converts(tiny_bert):
    folder, _ = tiny_bert
    one_line_error(run_cli("albertize", "--checkpoint", str(folder), "--embedding", "16", "--out", str(folder / "albert")),
                   "--out", "inside an input")
    assert not (folder / "albert").exists()


@pytest.mark.skipif(not Path("/dev/full").exists() or not hasattr(os, "mkfifo"), reason="needs /dev/full and FIFOs")
def test_outputs_that_cannot_take_the_result_are_refused_before_the_work(tmp_path, pairs_file):
    """/dev/full and a symlink loop were tracebacks after the work; a FIFO without a reader blocked. The checkpoint
    named here does not exist: the output is refused first, so nothing was computed."""
    os.symlink("loop.csv", loop := tmp_path / "loop.csv")
    os.mkfifo(fifo := tmp_path / "fifo.csv")
    nowhere = str(tmp_path / "no-checkpoint")
    for out, words in (("/dev/full", "No space left on device"), (str(loop), "symlink loop"), (str(fifo), "no reader")):
        one_line_error(run_cli("attention", "--checkpoint", nowhere, "--maps-out", out), "--maps-out", words)
        one_line_error(run_cli("score", str(pairs_file), "--checkpoint", nowhere, "--out", out), "--out", words)


def test_the_one_path_check_refuses_what_no_file_system_takes(tmp_path):
    from albert_lab.paths import user_path

    os.symlink("loop", loop := tmp_path / "loop")
    for text, words in (("~nouser-albert-lab/x", "no user 'nouser-albert-lab'"), ("a\x00b", "control character"),
                        ("x" * 300, "too long"), (str(loop / "x"), "symlink loop"), (str(loop), "symlink loop")):
        with pytest.raises(AlbertLabError, match=words):
            user_path(text)
    assert user_path("~/x") == Path.home() / "x"
    assert user_path(str(tmp_path / "new" / "x")) == tmp_path / "new" / "x"


@pytest.mark.parametrize("args", [
    ("albertize", "--checkpoint", "x", "--out", "~nouser-albert-lab/x"),
    ("score", "p.csv", "--checkpoint", "~nouser-albert-lab/x"),
    ("card", "~nouser-albert-lab/x"),
    ("train", "--corpus", "~nouser-albert-lab/c.txt", "--steps", "1"),
    ("train", "--runs-dir", "loop", "--steps", "1"),
    ("score", "p.csv", "--checkpoint", "albert-sop", "--out", "loop/x.csv"),
    ("card", "a\x00b"),
    ("card", "x" * 300),
])
def test_every_path_a_user_gives_goes_through_one_check(tmp_path, args):
    """A user that does not exist was a RuntimeError (and albertize made a literal ./~nouser folder), a loop a
    'Symlink loop' RuntimeError, a NUL byte a ValueError, a long name an OSError."""
    (tmp_path / "p.csv").write_bytes(HEADER + b"a,b\n")
    os.symlink("loop", tmp_path / "loop")
    one_line_error(run_cli(*args, cwd=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loop", "p.csv"]  # no ./~nouser, no run folder


def test_a_typed_number_is_read_in_ascii_only():
    from albert_lab.fields import ascii_float, ascii_int

    assert [ascii_int(t) for t in ("12", " -3 ", "+7", "0" * 40)] == [12, -3, 7, 0]
    for text in ("", "-", "\u00b2", "\u0661\u0662", "\uff11\uff12", "1_000", "1e3", "4.0", "1" * 41, "1 2"):
        assert ascii_int(text) is None, text
    assert [ascii_float(t) for t in ("0.5", "-1e-3", " 2 ")] == [0.5, -0.001, 2.0]
    for text in ("nan", "inf", "-inf", "1e400", "\uff11.5", "1_0", "1" * 41, ""):
        assert ascii_float(text) is None, text


@pytest.mark.parametrize("args, words", [
    (("train", "--threads", "1000000000"), "--threads"),
    (("train", "--threads", "0"), "--threads"),
    (("fit-head", "--checkpoint", "albert-sop", "--steps", "1" + "0" * 21), "--steps"),
    (("fit-head", "--checkpoint", "albert-sop", "--train-pairs", "1" + "0" * 12), "--train-pairs"),
    (("cka", "--checkpoint", "albert-sop", "--max-tokens", "1000000000"), "--max-tokens"),
    *[((*command, "--seed", seed), "--seed") for seed in ("-1", str(2**70))
      for command in (("train", "--steps", "1"), ("fit-head", "--checkpoint", "albert-sop"),
                      ("extrapolate", "--checkpoint", "albert-sop"), ("logit-lens", "--checkpoint", "albert-sop"),
                      ("gradflow", "--checkpoint", "albert-sop"), ("albertize", "--checkpoint", "x", "--out", "y"))],
    *[(("train", "--corpus", f"wiki-vital[{part}]", "--steps", "1"), "wiki-vital[:N]") for part in (":abc", ":", ":-5", ":0")],
    *[(("train", "--corpus", f"wiki-vital[:{n}]", "--steps", "1"), "wiki-vital[:N]") for n in ("\u00b2", "\u0661\u0662")],
    # a whole number is written in ASCII digits: int() read '١٢' and '１２' as 12 (issue 67, F4's neighbours)
    *[(("extrapolate", "--checkpoint", "albert-sop", "--seed", seed), "is not a whole number")
      for seed in ("\u0661\u0662", "\uff11\uff12", "\u00b2", "1_000")],
    *[((*command, "\u0661\u0662"), f"{command[-1]}: '\u0661\u0662' is not a whole number")
      for command in (("extrapolate", "--checkpoint", "albert-sop", "--seq-len"), ("params", "--seq-len"),
                      ("params", "--hidden"), ("albertize", "--checkpoint", "x", "--out", "y", "--embedding"),
                      ("app", "--port"))],
])
def test_numeric_options_are_bounded(shipped, tmp_path, args, words):
    """--threads 1e9 aborted in libgomp, --steps 1e21 ran for ever, --max-tokens 1e9 built 4.3 GB matrices, a seed
    out of range was a traceback (and left a failed run), wiki-vital[:abc] a ValueError and [:-5] 'all but 5'."""
    result = run_cli(*args, "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path,
                     env={"ALBERT_LAB_CHECKPOINTS": str(shipped)}) if args[0] == "train" else \
        run_cli(*args, cwd=tmp_path, env={"ALBERT_LAB_CHECKPOINTS": str(shipped)})
    one_line_error(result, words)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "y").exists()
