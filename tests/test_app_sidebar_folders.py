"""The sidebar's folder field against paths outside the allowed folders (AppTest and places.check_local_folder):
what a visitor types tells nothing of the server's users, home folders or folders outside. The
field's other checks are in tests/test_app_sidebar.py."""

import pytest


@pytest.mark.parametrize("cwd", ["project", "allowed"])
def test_a_tilde_tells_nothing_of_users_or_their_homes_whatever_follows_it(app, shipped, monkeypatch, cwd):
    """`~`, `~root`, `~nobody` (home /nonexistent) and a user that does not exist, alone, with a
    folder after them, or with a way back into an allowed folder after them ('~root/..' then the
    checkpoints' path: inside for a user whose home is one folder deep): one message for all, so
    nothing tells which users exist or where their homes are. Also when the app runs inside an
    allowed folder, where '~nosuchuser' read as a relative path was inside and said 'no user'."""
    from app.shell.guard import without_server_paths

    if cwd == "allowed":
        monkeypatch.chdir(shipped)
    back = f"/..{shipped / 'albert-sop'}"  # from a home one folder deep (/root, /nonexistent) to a shipped checkpoint
    said = {}
    for user in ("", "root", "nobody", "nosuchuser123"):
        for rest in ("", "/", "/.ssh", "/../..", back):
            text = f"~{user}{rest}"
            app.sidebar.text_input(key="add_source").set_value(text)
            app.sidebar.button(key="add_button").click().run()
            assert not app.exception, (text, app.exception)
            errors = [e.value for e in app.error]
            shown = without_server_paths(repr(text if len(text) <= 60 else text[:60] + "..."))  # as the message quotes it
            said[text] = errors[0].replace(shown, "<text>") if len(errors) == 1 else (errors, [t.value for t in app.toast])
    assert len(set(map(str, said.values()))) == 1, said
    assert "is outside the folders the app may read (" in next(iter(said.values()))


def test_a_way_back_through_folders_outside_is_taken_as_written(shipped, monkeypatch):
    """'/etc/../<checkpoints>/x' and '/nonexistent/../<checkpoints>/x' walked /etc or failed on
    /nonexistent: whether a folder outside exists showed in what opened. Now the '..' are taken as
    written before anything is looked up, and both are the checkpoint's own path."""
    from albert_lab.errors import AlbertLabError
    from app.shell.places import check_local_folder

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    inside = shipped / "albert-sop"
    for outside in ("/etc", "/nonexistent", "/root/.ssh"):
        assert check_local_folder(f"{outside}/..{'/..' * outside.count('/', 1)}{inside}") == str(inside)
    with pytest.raises(AlbertLabError, match="is outside the folders the app may read"):
        check_local_folder(f"{inside}/../../../etc")
    monkeypatch.setenv("HOME", str(shipped))  # a home inside an allowed folder: ~ is a way to it
    assert check_local_folder("~/albert-sop") == str(inside)


def test_an_allowed_dirs_symlink_loop_is_one_line_like_its_siblings(app, monkeypatch, tmp_path, capsys):
    """Issue 67, F8: ALBERT_LAB_ALLOWED_DIRS naming a symlink loop was 'Something went wrong ... RuntimeError: Symlink
    loop' once a visitor named a folder; the other four variables were one line. Now the same rule checks each entry,
    in the app (a message) and when `albert-lab app` starts (one line, exit 2, no server)."""
    import os
    from pathlib import Path

    from conftest import opened_by_link

    from albert_lab import cli
    from albert_lab.errors import AlbertLabError
    from albert_lab.paths import allowed_roots

    os.symlink("loop", tmp_path / "loop")
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", f"{tmp_path}:{tmp_path / 'loop'}")
    with pytest.raises(AlbertLabError, match=r"ALBERT_LAB_ALLOWED_DIRS's entry '.*loop' is or passes through a symlink loop"):
        allowed_roots()
    app.sidebar.text_input(key="add_source").set_value("runs/x")
    for at in (opened_by_link({"ckpt": "albert-sop,runs/x"}, "model_card"), app.sidebar.button(key="add_button").click().run()):
        assert not at.exception, [e.value for e in at.exception]
        said = [m.value for m in [*at.error, *at.warning] if "ALBERT_LAB_ALLOWED_DIRS" in m.value]
        assert said and all("symlink loop" in m and "Traceback" not in m and "RuntimeError" not in m for m in said), said
    started = []
    monkeypatch.setattr(os, "execve", lambda *args: started.append(args))
    assert cli.main(["app", "--port", "1"]) == 2 and not started
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("albert-lab app: error: ALBERT_LAB_ALLOWED_DIRS's entry") and "symlink loop" in line
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", f"{tmp_path}::~")  # empty entries skipped, ~ expanded, as before
    assert allowed_roots()[2:] == [tmp_path.resolve(), Path.home().resolve()]


def test_a_folder_that_does_not_load_is_named_as_the_visitor_typed_it_never_by_the_servers_path(app, shipped):
    """A bad sidebar folder's error printed the server's absolute path (the library names the path it was given)."""
    broken = shipped / "not-a-model"
    broken.mkdir()
    (broken / "config.json").write_text("{")
    app.sidebar.text_input(key="add_source").set_value(str(broken))
    app.sidebar.button(key="add_button").click().run()
    [error] = [e.value for e in app.error]
    assert str(shipped) not in error and "not-a-model" in error, error
    assert f"{shipped.name}/not-a-model" in error  # a listed folder by its own name, then the way in
