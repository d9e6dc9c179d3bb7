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
            shown = repr(text if len(text) <= 60 else text[:60] + "...")  # as the message quotes it
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
