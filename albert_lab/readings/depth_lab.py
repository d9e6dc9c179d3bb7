"""What the Depth lab's VGG charts show, in words read off their own curves: which nets learn and
which stay at chance, what that says at these settings, and how far the gradient reaches the first
layers. Pure functions of the frames the charts draw (analysis.depth.compare_vgg's history: model,
step, test_accuracy; its flow: model, step, layer, mean_abs), so the caption follows any settings:
the page shows `reading`, and a notebook gets the same words from the same frames."""

from __future__ import annotations

import pandas as pd

from albert_lab.analysis.depth import DIGIT_CLASSES, vgg_label

CHANCE = 1 / DIGIT_CLASSES  # test accuracy of a guess: the digits' ten classes are about equally many
LEARNED = 2 * CHANCE  # a net whose last records average at least twice chance has learned something
SWING = 0.15  # over the last half of the steps, a spread beyond this is called a swing


def net_words(group: pd.DataFrame) -> tuple[bool, str]:
    """(learned, its words) for one net's history: its last accuracy (mean of the last three records),
    its swing over the last half of the steps, or the band it stayed in at chance."""
    acc = group.sort_values("step").test_accuracy.to_numpy(dtype=float)
    final = float(acc[-3:].mean())
    if final >= LEARNED:
        late = acc[len(acc) // 2:]
        swing = (f", swinging between {late.min():.2f} and {late.max():.2f} over the last half of the steps"
                 if late.max() - late.min() > SWING else "")
        return True, f"learns, to {final:.2f} (its last three records' mean){swing}"
    if acc.max() < LEARNED:
        return False, f"stays at chance ({acc.min():.2f}-{acc.max():.2f} at every record)"
    return False, f"rises to {acc.max():.2f}, then falls back to {final:.2f}, near chance"


def vgg_caption(history: pd.DataFrame, steps: int, lr: float) -> str:
    """The VGG chart's caption: each net's curve in words, then what the four say together."""
    said = {name: net_words(group) for name, group in history.groupby("model", sort=False)}
    nets = {(depth, bn): said[vgg_label(depth, bn)][0] for depth in (8, 38) for bn in (False, True)
            if vgg_label(depth, bn) in said}
    text = (f"Test accuracy at SGD learning rate {lr:g} over {steps} steps (chance {CHANCE:.1f}): "
            + "; ".join(f"**{name}** {words}" for name, (_, words) in said.items()) + ".")
    if len(nets) == 4:
        if not nets[8, False] and not nets[38, False] and nets[8, True] and nets[38, True]:
            finals = {depth: float(history[history.model == vgg_label(depth, True)].sort_values("step")
                                   .test_accuracy.iloc[-3:].mean()) for depth in (8, 38)}
            further = " (the 8-layer one further)" if finals[8] > finals[38] + SWING else ""
            text += (f" So at this learning rate and step budget, without BatchNorm not even 8 layers learn, and with it "
                     f"both depths do{further}: BatchNorm is what lets either net train here, not only the deep one.")
        elif nets[8, False] and not nets[38, False] and nets[38, True]:
            text += (" So depth alone stops the plain net here, and BatchNorm lets VGG-38 learn: the coursework's "
                     "lesson.")
        elif all(nets.values()):
            text += " All four learn at these settings."
        elif not any(nets.values()):
            text += " None learns at these settings."
    return text + " The coursework's 47-52% below is CIFAR-100 after full training."


def reading(history: pd.DataFrame, flow: pd.DataFrame, steps: int, lr: float) -> str:
    """Everything the VGG tab says under its two charts, as markdown: the accuracy curves, then the gradient panel."""
    return vgg_caption(history, steps, lr) + " " + gradient_words(flow)


VANISHED = 1e3  # a first layer's mean |dL/dW| this many times smaller than the other net's: the gradient vanished


def gradient_words(flow: pd.DataFrame) -> str:
    """The gradient panel in words: each net's first layer's mean |dL/dW| at its last step, and, where the plain
    VGG-38's is orders of magnitude below the plain VGG-8's, that the gradient vanishes on its way down (the
    depth lesson the panel draws: VGG-38 at about 1e-20 against VGG-8's 1e-6 said nothing in words)."""
    last = flow[flow.step == flow.groupby("model").step.transform("max")]
    first = {model: float(group.sort_values("layer").mean_abs.iloc[0]) for model, group in last.groupby("model", sort=False)}
    text = "First layer's mean |dL/dW| at the last step: " + "; ".join(f"{m} {v:.1e}" for m, v in first.items()) + "."
    shallow, deep = first.get(vgg_label(8, False)), first.get(vgg_label(38, False))
    if shallow and deep is not None and deep * VANISHED < shallow:
        text += (f" Without BatchNorm the gradient reaching VGG-38's first layer is {shallow / max(deep, 1e-300):.0e} times "
                 "smaller than VGG-8's: it vanishes on its way down 38 layers, so the first layers barely move.")
        bn = first.get(vgg_label(38, True))
        if bn is not None and bn * VANISHED >= shallow:
            text += f" With BatchNorm, VGG-38's first layer gets {bn:.1e}: the gradient reaches the first layers again."
    return text
