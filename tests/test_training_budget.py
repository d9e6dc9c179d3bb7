"""The run queue's budget (per browser and overall) and the disk quota of a shared server:
a visitor clicking 'Start' 60 times starts two worker processes, not sixty."""

import threading
import time
from pathlib import Path

import pytest
from conftest import CEILING, tiny_spec, wait_until

import albert_lab.training.jobs as jobs
from albert_lab.errors import AlbertLabError, RunError
from albert_lab.limits import MAX_ACTIVE_RUNS, MAX_RUNS_PER_VISITOR, check_disk_quota, folder_bytes
from albert_lab.training.config import TrainConfig
from albert_lab.training.queue import QueueBudget, discard_upload, owner_of, training_slot
from albert_lab.training.runs import list_runs, read_run

BUDGET = QueueBudget(overall=MAX_ACTIVE_RUNS, per_owner=MAX_RUNS_PER_VISITOR)


def _config(name: str = "click", corpus: str = "wiki-vital[:600]") -> TrainConfig:
    return TrainConfig(spec=tiny_spec(1000).to_dict(), corpus=corpus, vocab_size=1000, max_steps=5, max_seq_len=64,
                       name=name)


@pytest.fixture
def launches(monkeypatch):
    """Worker launches counted, not made; the corpus and tokenizer prepared once for all clicks."""
    spawned: list[Path] = []
    monkeypatch.setattr(jobs, "spawn_worker", lambda run_dir: spawned.append(run_dir) or 0)
    prepared = jobs.prepare(_config())
    prepares = []
    monkeypatch.setattr(jobs, "prepare", lambda config, **_: prepares.append(config) or prepared)
    return spawned, prepares


def test_sixty_start_clicks_from_one_browser_start_two_workers(tmp_path, launches):
    spawned, prepares = launches
    refused = []
    for _ in range(60):
        try:
            jobs.start_run(_config(), tmp_path, owner="browser-a", budget=BUDGET)
        except RunError as err:
            refused.append(str(err))
    assert len(spawned) == MAX_RUNS_PER_VISITOR == 2 and len(list_runs(tmp_path)) == 2
    assert len(prepares) == 2  # a refused click does no corpus or tokenizer work
    assert len(refused) == 58 and set(refused) == {
        "queue full: you have 2 runs queued or running (at most 2 per browser); start this one when one of them ends, "
        "or cancel one under 'Runs'"}
    assert {owner_of(tmp_path, r.id) for r in list_runs(tmp_path)} == {"browser-a"}


def test_many_browsers_fill_the_server_queue_and_no_more(tmp_path, launches):
    spawned, _ = launches
    refused = []
    for visitor in range(12):  # a forged cookie is a new browser: the overall budget still holds
        try:
            jobs.start_run(_config(), tmp_path, owner=f"browser-{visitor}", budget=BUDGET)
        except RunError as err:
            refused.append(str(err))
    assert len(spawned) == MAX_ACTIVE_RUNS == 8 and len(list_runs(tmp_path)) == 8
    assert refused == ["queue full: 8 runs are queued or running on this server (at most 8); start yours when one ends"] * 4


def _click_at_once(root: Path, clicks: int) -> None:
    """`clicks` Start clicks of one browser at the same instant (threads past one barrier)."""
    barrier = threading.Barrier(clicks)

    def click():
        barrier.wait()
        try:
            jobs.start_run(_config(), root, owner="browser-a", budget=BUDGET)
        except RunError:
            pass

    threads = [threading.Thread(target=click) for _ in range(clicks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_clicks_at_the_same_instant_never_pass_the_budget(tmp_path, launches):
    """Counted and added under the queue's lock: 16 simultaneous starts of one browser (16 tabs) make 2 runs."""
    spawned, _ = launches
    _click_at_once(tmp_path, 16)
    assert len(spawned) == 2 and len(list_runs(tmp_path)) == 2


def test_clicks_at_the_same_instant_prepare_one_at_a_time(tmp_path, launches, monkeypatch):
    """Streamlit leaves a click's script thread running when the next click starts another, so rapid
    clicks launch side by side: each passed the first count and prepared (a tokenizer trained per
    click, 1.3 GB each) before the second count refused all but two."""
    spawned, prepares = launches
    counted, at_once, most = threading.Lock(), [0], [0]
    fake = jobs.prepare  # the fixture's: counted, and prepared once for all

    def slow_prepare(config, **_):
        with counted:
            at_once[0] += 1
            most[0] = max(most[0], at_once[0])
        time.sleep(0.2)
        with counted:
            at_once[0] -= 1
        return fake(config)

    monkeypatch.setattr(jobs, "prepare", slow_prepare)
    _click_at_once(tmp_path, 16)
    assert most[0] == 1 and len(prepares) == 2 and len(spawned) == 2  # those that waited found the queue full


def test_a_run_that_ended_frees_its_place(tmp_path, launches):
    from albert_lab.training.runs import update_run

    first = jobs.start_run(_config(), tmp_path, owner="browser-a", budget=BUDGET)
    jobs.start_run(_config(), tmp_path, owner="browser-a", budget=BUDGET)
    with pytest.raises(RunError, match="queue full"):
        jobs.start_run(_config(), tmp_path, owner="browser-a", budget=BUDGET)
    update_run(first.path, status="cancelled")
    jobs.start_run(_config(), tmp_path, owner="browser-a", budget=BUDGET)
    assert len([r for r in list_runs(tmp_path) if r.active]) == 2


def test_the_command_line_has_no_budget_unless_asked(tmp_path, launches):
    spawned, _ = launches
    for _ in range(3):
        jobs.start_run(_config(), tmp_path)
    assert len(spawned) == 3


def test_an_upload_is_discarded_only_when_no_run_trains_on_it(tmp_path, launches):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    used, refused = uploads / "abc-used.txt", uploads / "def-refused.txt"
    used.write_text("text"), refused.write_text("text")
    jobs.start_run(_config(corpus=str(used)), tmp_path, owner="browser-a", budget=BUDGET)
    assert not discard_upload(tmp_path, used) and used.is_file()
    assert discard_upload(tmp_path, refused) and not refused.exists()


def test_the_disk_quota_counts_what_visitors_wrote(tmp_path):
    (tmp_path / "albertized" / "x").mkdir(parents=True)
    (tmp_path / "albertized" / "x" / "model.safetensors").write_bytes(b"\1" * 200_000)
    (tmp_path / "uploads").mkdir()
    (tmp_path / "uploads" / "a.txt").write_bytes(b"\1" * 100_000)
    assert 300_000 <= folder_bytes(tmp_path) < 320_000
    check_disk_quota(tmp_path, 10_000, quota=400_000)
    with pytest.raises(AlbertLabError, match=r"^disk quota: .* holds 0\.00 GiB of the 0\.00 GiB the app may write, and "
                                             r"this conversion needs 1 MB more; delete old runs"):
        check_disk_quota(tmp_path, 1 << 20, quota=400_000, what="this conversion")


def test_new_tokenizers_stop_at_the_cache_quota_and_cached_ones_still_serve(tmp_path, monkeypatch):
    """A visitor choosing another vocabulary size at every start made a tokenizer and a tokenized corpus
    each time, outside runs/ and its quota."""
    from albert_lab.training.prepare import prepare

    monkeypatch.setenv("ALBERT_LAB_CACHE", str(tmp_path / "cache"))
    made = prepare(_config(), cache_quota=1 << 30)  # room: a tokenizer of 1,000 pieces is made
    assert len(made.tokenizer) == 1000
    used = sum(folder_bytes(tmp_path / "cache" / name) for name in ("tokenizers", "tokenized"))
    assert prepare(_config(), cache_quota=used).tokenizer_dir == made.tokenizer_dir  # cached: nothing new
    with pytest.raises(RunError, match=r"^disk quota: the cached tokenizers and tokenized corpora hold 0\.00 GiB of the "
                                       r"0\.00 GiB that runs started here may fill, and a vocabulary of 1,200 on "
                                       r"wiki-vital\[:600\] needs a new tokenizer; vocabulary sizes already made for wiki-vital\[:600\]: 1000$"):
        prepare(TrainConfig(**{**_config().to_dict(), "vocab_size": 1200}), cache_quota=used)
    assert sorted(p.name.split("-")[1] for p in (tmp_path / "cache" / "tokenizers").iterdir()) == ["1000"]


def test_a_run_that_would_take_the_servers_memory_is_refused_before_any_work(tmp_path, launches):
    """The form allows H 1024, L 24, batch 512, 512 tokens: one visitor's run could take most of the machine."""
    from albert_lab.params import machine_memory, memory_needed

    spawned, prepares = launches
    config = _config()
    need = memory_needed(config.model_spec().replace(vocab_size=1000), config.batch_size, config.max_seq_len)
    share = 0.9 * need / machine_memory()[0]
    with pytest.raises(RunError, match=r"^memory: training ALBERT .* on batches of 64 x 64 tokens needs about \d+ MB; a run "
                                       r"started here may take \d+ MB \(\d+% of this server.s memory"):
        jobs.start_run(config, tmp_path, owner="a", budget=QueueBudget(8, 2, memory_share=share))
    assert not prepares and not spawned and not list_runs(tmp_path)
    jobs.start_run(config, tmp_path, owner="a", budget=QueueBudget(8, 2, memory_share=1.2 * share))
    assert len(spawned) == 1


def test_a_queued_worker_waits_without_the_training_code(tmp_path):
    """A queued run's worker imported torch and the training loop before it waited for its turn:
    about 440 MB held by each run in the queue, while only one trains at a time."""
    run_dir, _ = jobs.create_run(_config(), tmp_path)
    with training_slot(tmp_path):  # another run is training
        pid = jobs.spawn_worker(run_dir)
        wait_until(lambda: "queued: another run in" in read_run(run_dir).log_tail(), "the worker to say it waits")
        assert read_run(run_dir).status == "queued"
        maps = Path(f"/proc/{pid}/maps").read_text()
        resident = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * 4096
        jobs.cancel_run(run_dir)
        wait_until(lambda: read_run(run_dir).status == "cancelled", "the queued run to end cancelled")
    assert "libtorch" not in maps and resident < 150 << 20, f"{resident >> 20} MB"
    assert read_run(run_dir).status == "cancelled"


def test_a_worker_is_gone_when_the_next_run_may_train(tmp_path):
    """The worker released the one-run-at-a-time slot, then took seconds to tear down torch: the
    next run's worker was importing torch and loading its corpus beside it (two training workers'
    memory at once in bench_clicks.py). Now it ends at once: no interpreter teardown runs after the
    slot is free (an exit handler the worker is given never runs), and it is gone within seconds
    (a bound that paces nothing: 0.6 s of this test's own scheduling at load 12)."""
    import fcntl
    import os
    import subprocess
    import sys
    from dataclasses import replace

    from albert_lab.training.queue import LOCK

    # one small step and a small final evaluation, on one thread: what is watched is the worker's end
    run_dir, _ = jobs.create_run(replace(_config(), max_steps=1, batch_size=4, eval_limit=8, threads=1), tmp_path)
    hook, torn = tmp_path / "hook", tmp_path / "torn-down"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("import atexit, os, pathlib\n"
                                           "atexit.register(pathlib.Path(os.environ['TORN_DOWN']).write_text, 'torn down')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]), "TORN_DOWN": str(torn)}
    worker = subprocess.Popen([sys.executable, "-m", "albert_lab.training.worker", str(run_dir)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wait_until(lambda: "pid" in read_run(run_dir).raw and read_run(run_dir).status != "queued", "the worker to hold the slot")
    freed = []
    with open(tmp_path / LOCK, "a+") as slot:
        taker = threading.Thread(target=lambda: (fcntl.flock(slot, fcntl.LOCK_EX), freed.append(time.perf_counter())),
                                 daemon=True)
        taker.start()  # blocks until the worker lets the slot go
        taker.join(CEILING)
        assert freed, "the worker never let the slot go"
        worker.wait(timeout=CEILING)
        gone = time.perf_counter()
    assert worker.returncode == 0 and read_run(run_dir).status == "succeeded"
    assert not torn.exists(), "the worker tore its interpreter down after it let the slot go"
    assert gone - freed[0] < 5, f"{gone - freed[0]:.2f} s"


def test_cookie_less_visitors_of_one_address_hold_at_most_half_the_server(tmp_path, launches):
    """Four browser contexts without cookies (a new owner each) held all 8 places; a fifth visitor
    got 'queue full'. The address is the limit a dropped cookie does not escape."""
    from albert_lab.limits import MAX_RUNS_PER_ADDRESS
    from albert_lab.training.queue import address_of, app_budget

    spawned, _ = launches
    refused = []
    for visitor in range(8):
        try:
            jobs.start_run(_config(), tmp_path, owner=f"no-cookie-{visitor}", budget=app_budget(), address="one-address")
        except RunError as err:
            refused.append(str(err))
    assert len(spawned) == MAX_RUNS_PER_ADDRESS == 4
    assert set(refused) == {"queue full: 4 runs started from your network address are queued or running (at most 4 per "
                            "address); start this one when one of them ends"}
    assert {address_of(tmp_path, r.id) for r in list_runs(tmp_path)} == {"one-address"}
    jobs.start_run(_config(), tmp_path, owner="another-visitor", budget=app_budget(), address="another-address")
    assert len(spawned) == 5  # the fifth visitor, from elsewhere, still starts


def test_a_run_from_the_app_is_capped_in_steps_and_minutes(tmp_path, launches):
    """Steps 100,000 held the only training slot for an estimated 16 days."""
    from dataclasses import replace

    from albert_lab.limits import APP_MAX_MINUTES, APP_MAX_STEPS
    from albert_lab.training.queue import app_budget

    spawned, prepares = launches
    with pytest.raises(RunError, match=f"at most {APP_MAX_STEPS:,} steps \\(it asked 100,000\\)"):
        jobs.start_run(replace(_config(), max_steps=100_000), tmp_path, owner="a", budget=app_budget())
    assert not spawned and not prepares and not list_runs(tmp_path)
    run = jobs.start_run(replace(_config(), max_steps=APP_MAX_STEPS), tmp_path, owner="a", budget=app_budget())
    assert run.config["max_minutes"] == APP_MAX_MINUTES and run.config["max_steps"] == APP_MAX_STEPS
    shorter = jobs.start_run(replace(_config(), max_minutes=5.0), tmp_path, owner="b", budget=app_budget())
    assert shorter.config["max_minutes"] == 5.0  # a shorter budget is kept
    cli = jobs.start_run(replace(_config(), max_steps=100_000), tmp_path / "cli")  # no budget: the command line's own
    assert cli.config["max_steps"] == 100_000 and cli.config.get("max_minutes") is None
