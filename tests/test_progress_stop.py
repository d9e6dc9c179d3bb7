"""Long computations tell their progress and can be stopped: the library's callbacks and the page's Stop.

The library's `progress` callbacks (gradient flow layer by layer, integrated gradients pass
by pass, pair scoring batch by batch) and the page's Stop, in a real browser."""

import re

import pytest
import torch
from conftest import ARTIFACTS, ROOT, TEXTS

from albert_lab.analysis.attribution import attribute_pair
from albert_lab.analysis.gradflow import gradient_flow
from albert_lab.analysis.pairs import pairs_frame, score_pairs


class Stop(BaseException):
    """What Streamlit raises at a progress report when Stop was pressed (a BaseException)."""


def stop_after(fraction: float, heard: list):
    def progress(done: float, what: str) -> None:
        heard.append((done, what))
        if done > fraction:
            raise Stop
    return progress


def untouched(model: torch.nn.Module) -> bool:
    return all(p.grad is None for p in model.parameters()) and not any(
        m._forward_hooks or m._forward_pre_hooks or m._backward_hooks for m in model.modules())


@pytest.mark.parametrize("which", [0, 1])  # ALBERT (shared) and BERT
def test_gradient_flow_tells_each_layer_and_stops_anywhere_leaving_the_model_as_it_was(bundles, which):
    bundle = bundles[which]
    whole = gradient_flow(bundle, TEXTS, objective="none", seed=1)
    heard = []
    told = gradient_flow(bundle, TEXTS, objective="none", seed=1, progress=lambda f, w: heard.append((f, w)))
    assert told.equals(whole)  # telling changes nothing
    fractions = [f for f, _ in heard]
    layers = bundle.spec.num_layers
    assert len(heard) == 2 * layers and fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    assert heard[0][1] == f"forward, layer 1 of {layers}" and heard[-1][1] == f"backward, layer 1 of {layers}"
    for at in (0.1, 0.5, 0.9):  # in the forward, in the backward (its hooks run in the autograd engine)
        with pytest.raises(Stop):
            gradient_flow(bundle, TEXTS, objective="none", seed=1, progress=stop_after(at, []))
        assert untouched(bundle.model)
    assert gradient_flow(bundle, TEXTS, objective="none", seed=1).equals(whole)


def test_integrated_gradients_tell_each_pass_and_a_stop_leaves_no_hook_behind(bundles):
    albert = bundles[0]
    args = (albert, "The river flows north.", "It reaches the sea.", 0, 40)
    whole = attribute_pair(*args)
    heard = []
    told = attribute_pair(*args, progress=lambda f, w: heard.append((f, w)))
    assert told.tokens.equals(whole.tokens) and told.probability == whole.probability
    assert [w for _, w in heard] == ["integration steps 1-16 of 40", "integration steps 17-32 of 40",
                                     "integration steps 33-40 of 40"]
    with pytest.raises(Stop):
        attribute_pair(*args, progress=stop_after(0.3, []))
    assert untouched(albert.model)
    assert attribute_pair(*args).tokens.equals(whole.tokens)


def test_pair_scoring_tells_each_batch_of_each_checkpoint(bundles):
    pairs = pairs_frame([f"Sentence number {i} is here." for i in range(300)], ["It follows."] * 300)
    whole = score_pairs(list(bundles), pairs)
    heard = []
    told = score_pairs(list(bundles), pairs, progress=lambda f, w: heard.append((f, w)))
    assert told.equals(whole)
    fractions = [f for f, _ in heard]
    assert fractions == sorted(fractions) and fractions[0] == 0 and max(fractions) < 1
    assert [w for _, w in heard[:2]] == [f"{bundles[0].name} (1 of 2): tokenizing, 0 of 600 sentences",
                                         f"{bundles[0].name} (1 of 2): 0 of 300 pairs"]
    # the second checkpoint starts where the first one's share of the work (H^2 L) ends
    cost = [b.spec.hidden_size ** 2 * b.spec.num_layers for b in bundles]
    assert next(f for f, w in heard if w.startswith(f"{bundles[1].name} (2 of 2): 0 of")) == pytest.approx(cost[0] / sum(cost))
    with pytest.raises(Stop):
        score_pairs(list(bundles), pairs, progress=stop_after(0.6, []))


@pytest.mark.browser
def test_a_long_upload_shows_its_progress_and_stops_when_asked_in_chromium(server, browser, tmp_path):
    """5,000 pairs read by the project's four first checkpoints (checkpoints/, named by the link) take
    minutes on two cores: the page shows the pairs done and the time left, and Stop ends the scoring
    within seconds."""
    from urllib.parse import urlencode

    from playwright.sync_api import expect

    from albert_lab.checkpoint.discover import discover_checkpoints
    from app.shell.look import shipped_first
    from app.shell.registry import address

    sentence = "The old stone bridge over the river was rebuilt after the great flood of the spring, and it still stands"
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sentence_a,sentence_b\n" + "".join(f'"{sentence} {i}.","{sentence} again {i}."\n' for i in range(5000)))
    four = [c["name"] for c in shipped_first(c.to_dict() for c in discover_checkpoints(ROOT / "checkpoints", tmp_path / "runs"))][:4]
    link = {"ckpt": ",".join(f"checkpoints/{name}" for name in four), "pair_tab": "Upload pairs"}
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{address(server, 'sentence_pairs')}?{urlencode(link)}")
    expect(page.get_by_role("tab", name="Upload pairs", selected=True)).to_be_visible()  # opened by the link: no click
    page.locator("input[type=file]").first.set_input_files(str(pairs))
    expect(page.get_by_text("Scoring 5,000 pairs with")).to_be_visible()
    # a name the served app lists already (its own albert-sop) is offered as name-2
    told = re.compile(rf"Scoring 5,000 pairs with 4 checkpoints: {re.escape(four[0])}(-2)? \(1 of 4\): [0-9,]+ of 5,000 "
                      r"pairs; about .+ left")
    expect(page.get_by_text(told)).to_be_visible()  # a batch done
    page.screenshot(path=str(ARTIFACTS / "sentence-pairs-upload-progress.png"))
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_text("Stopped before it finished: scoring 5,000 pairs with 4 checkpoints.")).to_be_visible()
    expect(page.get_by_role("button", name="Compute it after all")).to_be_visible()
    expect(page.get_by_text("pairs scored from")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "sentence-pairs-upload-stopped.png"))


def test_a_stop_while_tokenizing_ends_it_before_the_other_batches(bundles, monkeypatch):
    """Sentences are tokenised in batches with a report before each: a Stop at the second report leaves
    the other batches untokenised and no pair scored."""
    from dataclasses import replace

    from albert_lab.analysis import pair_encoding

    monkeypatch.setattr(pair_encoding, "TOKENIZE_CHARS", 3000)  # ~100 of these sentences a batch
    called = []

    class Counting:
        def __init__(self, tokenizer):
            self.tokenizer = tokenizer

        def __getattr__(self, name):
            return getattr(self.tokenizer, name)

        def __call__(self, texts, **kwargs):
            called.append(len(texts))
            return self.tokenizer(texts, **kwargs)

    bundle = replace(bundles[0], tokenizer=Counting(bundles[0].tokenizer))
    pairs = pairs_frame([f"Sentence number {i} is here." for i in range(500)], ["It follows."] * 500)
    heard = []
    with pytest.raises(Stop):
        score_pairs(bundle, pairs, progress=_stop_at(2, heard))
    assert len(called) == 1 and 50 < called[0] < 150  # one batch of the 1,000 sentences, then the Stop
    assert [w for _, w in heard] == [f"{bundle.name} (1 of 1): tokenizing, 0 of 1,000 sentences",
                                     f"{bundle.name} (1 of 1): tokenizing, {called[0]:,} of 1,000 sentences"]


def _stop_at(report: int, heard: list):
    def progress(done: float, what: str) -> None:
        heard.append((done, what))
        if len(heard) == report:
            raise Stop
    return progress
