"""The software manuals of long-mix-plus: what each extractor keeps from a package's pages,
and the mix itself (scored on long-mix's held-out documents, never trained on them).

Synthetic pages stand in for the packages (CI installs only the default sources)."""

import json

import pytest

from albert_lab.cli import main
from albert_lab.data import extract, formats, sources
from albert_lab.data.corpora import load_corpus
from albert_lab.errors import DataError

PROSE = ["The planner compares the cost of every join order it can think of before it picks one.",
         "A sequential scan reads the whole table, which is cheap when most rows are wanted anyway.",
         "An index scan pays for random reads but skips the rows that the condition rules out."]


def page(title: str, paragraphs: list[str], tag: str = "p") -> bytes:
    body = "".join(f'<div class="para">{p}</div>' if tag == "div" else f"<p>{p}</p>" for p in paragraphs)
    return f"<html><head><title>{title}</title></head><body>{body}<pre>SELECT 1; -- never text</pre></body></html>".encode()


def test_html_paragraphs_keeps_inline_code_only_when_asked():
    html = b"<p>Call <code>free_netdev()</code> on the last use of the device, not before.</p><pre>x = 1</pre>"
    assert formats.html_paragraphs(html) == ["Call on the last use of the device, not before."]  # what sqlite-docs gets
    assert formats.html_paragraphs(html, inline_code=True) == ["Call free_netdev() on the last use of the device, not before."]
    divs = b'<div class="para">One paragraph here.</div><div class="note">Not one.</div>'
    assert formats.html_paragraphs(divs, para_class="para") == ["One paragraph here."]
    assert formats.html_paragraphs(divs) == []


def test_manuals_keep_prose_pages_and_skip_release_notes_indexes_and_translations():
    pg = "usr/share/doc/postgresql-doc-15/html/"
    docs = extract.postgres_docs({f"{pg}planner.html": page("Planner", PROSE), f"{pg}release-15-3.html": page("Release", PROSE),
                                  f"{pg}bookindex.html": page("Index", PROSE), f"{pg}short.html": page("Short", PROSE[:2]),
                                  "usr/share/doc/other/x.html": page("Other", PROSE)})
    assert [d.title for d in docs] == ["PostgreSQL: Planner"]
    assert docs[0].segments == tuple(PROSE)  # the <pre> block is not text
    heading = "pg_amcheck \u2014 checks for corruption in one or more PostgreSQL databases"  # a paragraph without a full stop
    (doc,) = extract.postgres_docs({f"{pg}app-pgamcheck.html": page("pg_amcheck", [heading, *PROSE]),
                                    f"{pg}copy.html": page("Copy", [heading, *PROSE])})  # the same page twice: once
    assert doc.segments == (heading, *PROSE)
    dj = "usr/share/doc/python-django-doc/html/"
    docs = extract.django_docs({f"{dj}topics/db.html": page("Models &#8212; Django 3.2.25 documentation", PROSE),
                                f"{dj}releases/3.2.html": page("3.2", PROSE), f"{dj}_modules/x.html": page("x", PROSE)})
    assert [d.title for d in docs] == ["Django: Models"]
    lx = "usr/share/doc/linux-doc-6.1/html/"
    docs = extract.linux_docs({f"{lx}admin-guide/mm.html": page("Memory &mdash; The Linux Kernel documentation", PROSE),
                               f"{lx}translations/it_IT/mm.html": page("Memoria", PROSE)})
    assert [d.title for d in docs] == ["Linux: Memory"]
    hb = "usr/share/doc/debian-handbook/html/"
    docs = extract.debian_handbook({f"{hb}en-US/apt.html": page("Chapter 6. apt", PROSE, "div"),
                                    f"{hb}fr-FR/apt.html": page("Chapitre 6. apt", PROSE, "div")})
    assert [(d.title, len(d.segments)) for d in docs] == [("Debian Handbook: Chapter 6. apt", 3)]


def test_the_readme_install_leaves_the_manuals_out_and_naming_them_installs_them(monkeypatch):
    fetched = []
    monkeypatch.setattr(sources, "is_installed", lambda name: False)
    monkeypatch.setattr(sources, "_download", lambda source: fetched.append(source.name) or b"")
    monkeypatch.setattr(formats, "deb_members", lambda data, name="": {})
    monkeypatch.setattr(formats, "tar_members", lambda data, name="": {})
    with pytest.raises(DataError, match="no text found"):  # stops at the first source: an empty package
        sources.install(log=lambda line: None)
    assert fetched == [next(iter(sources.SOURCES))]
    fetched.clear()
    with pytest.raises(DataError, match=r"linux-docs: no text found in linux-doc-6\.1 6\.1\.192-2"):
        sources.install(["linux-docs"], log=lambda line: None)
    assert fetched == ["linux-docs"]


def test_install_names_are_checked_and_force_needs_install(capsys):
    assert main(["corpora", "--install", "linux-doc"]) == 2
    assert "--install: unknown source or mix 'linux-doc'; allowed: long-mix, long-mix-plus, sotu," in capsys.readouterr().err
    assert main(["corpora", "--force"]) == 2
    assert "--force goes with --install" in capsys.readouterr().err


def test_long_mix_plus_holds_out_what_long_mix_holds_out(tmp_path, monkeypatch):
    """Each source is split on its own: a model trained on long-mix-plus has not seen one
    held-out document of long-mix, so it is scored on long-mix as every other model is."""
    monkeypatch.setenv("ALBERT_LAB_DATA", str(tmp_path))
    folder = sources.corpora_dir()
    folder.mkdir(parents=True)
    entries = {}
    for name, source in sources.SOURCES.items():
        docs = [{"title": f"{name} {i}", "segments": [f"{name} sentence {j} of document {i}." for j in range(4)]}
                for i in range(40)]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
        entries[name] = {"sha256": source.sha256}
    (folder / "manifest.json").write_text(json.dumps(entries))
    base, plus = load_corpus("long-mix"), load_corpus("long-mix-plus")
    key = lambda d: (d.source, d.title)
    assert {key(d) for d in base.heldout} < {key(d) for d in plus.heldout}
    assert not {key(d) for d in base.heldout} & {key(d) for d in plus.train}
    assert {d.source for d in plus.train} - {d.source for d in base.train} == set(sources.EXTRA)
    (folder / "django-docs.jsonl").unlink()
    with pytest.raises(DataError, match=r"'django-docs' is not installed; run `albert-lab corpora --install django-docs`$"):
        load_corpus("long-mix-plus")
