"""LAMB against a step computed by hand; schedule; parameter groups."""

import math

import torch
from conftest import tiny_spec

from albert_lab.models import build_model
from albert_lab.training.optim import Lamb, build_optimizer, lr_factor, parameter_groups


def test_lamb_matches_hand_computed_step():
    w = torch.nn.Parameter(torch.tensor([3.0, 4.0]))  # ||w|| = 5
    w.grad = torch.tensor([0.5, -1.0])
    opt = Lamb([w], lr=0.1, weight_decay=0.01, eps=1e-6)
    opt.step()
    # m = 0.1 g, v = 0.001 g^2 (no bias correction, as in ALBERT's code); update = m / (sqrt(v) + eps) + wd * w
    g = [0.5, -1.0]
    update = [0.1 * gi / (math.sqrt(0.001 * gi * gi) + 1e-6) + 0.01 * wi for gi, wi in zip(g, [3.0, 4.0])]
    ratio = 5.0 / math.hypot(*update)
    expected = [wi - 0.1 * ratio * ui for wi, ui in zip([3.0, 4.0], update)]
    assert torch.allclose(w.detach(), torch.tensor(expected), atol=1e-6)


def test_lamb_without_adaptation_and_zero_weights():
    b = torch.nn.Parameter(torch.zeros(2))
    b.grad = torch.tensor([1.0, -2.0])
    Lamb([dict(params=[b], weight_decay=0.0, adapt=False)], lr=0.5).step()
    step = 0.1 / (math.sqrt(0.001) + 1e-6)
    assert torch.allclose(b.detach(), torch.tensor([-0.5 * step, 0.5 * step]), atol=1e-5)
    z = torch.nn.Parameter(torch.zeros(3))  # ||w|| = 0 -> ratio 1
    z.grad = torch.ones(3)
    Lamb([z], lr=0.1, weight_decay=0.0).step()
    assert torch.allclose(z.detach(), torch.full((3,), -0.1 * step), atol=1e-5)


def test_no_decay_for_layernorm_and_bias():
    model = build_model(tiny_spec(50))
    decay, plain = parameter_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    assert all("LayerNorm" in names[id(p)] or "layer_norm" in names[id(p)] or p.ndim == 1 for p in plain["params"])
    assert all(p.ndim == 2 for p in decay["params"])
    assert len(decay["params"]) + len(plain["params"]) == len(list(model.parameters()))
    assert isinstance(build_optimizer(model, "adamw", 1e-3), torch.optim.AdamW)


def test_schedule_warms_up_then_decays_to_zero():
    assert lr_factor(0, 0.0, 10) == 0.1 and lr_factor(9, 0.09, 10) == 1.0
    assert lr_factor(10, 0.1, 10) == 0.9 and lr_factor(100, 1.0, 10) == 0.0


def test_adamw_is_fused_and_steps_as_the_unfused_loop_does():
    """The fused kernel (one call per step) changes the speed, not the weights."""
    torch.manual_seed(0)
    model = build_model(tiny_spec(50))
    twin = build_model(tiny_spec(50))
    twin.load_state_dict(model.state_dict())
    fused = build_optimizer(model, "adamw", 1e-3)
    plain = torch.optim.AdamW(parameter_groups_without_adapt(twin), lr=1e-3, eps=1e-6, betas=(0.9, 0.999))
    assert fused.defaults["fused"] and not plain.defaults.get("fused")
    ids = torch.randint(0, 50, (2, 12))
    for _ in range(5):
        for m, opt in ((model, fused), (twin, plain)):
            opt.zero_grad()
            m.albert(input_ids=ids).last_hidden_state.square().mean().backward()
            opt.step()
    for (name, a), b in zip(model.state_dict().items(), twin.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), name


def parameter_groups_without_adapt(model):
    return [{k: v for k, v in g.items() if k != "adapt"} for g in parameter_groups(model, 0.01)]


class ReferenceLamb(torch.optim.Optimizer):
    """LAMB a parameter at a time: the update as ALBERT's reference code writes it (and as
    Lamb computed it before it worked over all tensors at once), kept here as the oracle."""

    def __init__(self, params, lr=1.76e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01, adapt=True):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, adapt=adapt))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"], state["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                state["step"] += 1
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                update = m / (v.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update.add_(p, alpha=group["weight_decay"])
                if group["adapt"]:
                    w_norm, u_norm = p.norm(), update.norm()
                    ratio = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
                    update.mul_(ratio)
                p.sub_(group["lr"] * update)


def test_lamb_over_all_tensors_at_once_steps_as_the_reference_does():
    """The foreach LAMB and the per-parameter reference agree over several steps, both groups
    (trust ratio and weight decay, neither), a parameter without a gradient, a zero tensor.
    Tolerance: both run the same fp32 ops; only the norms' reduction order may differ, a
    relative 1e-7 on the ratio, so each weight moves by at most lr x 1e-7 x |update| per step
    (|update| is O(1) with the ratio applied): over 6 steps at lr 1e-2, far below 1e-6."""
    torch.manual_seed(0)
    model, twin = build_model(tiny_spec(50)), build_model(tiny_spec(50))
    twin.load_state_dict(model.state_dict())
    zeros = [torch.nn.Parameter(torch.zeros(3, 4)) for _ in range(2)]  # ||w|| = 0 at the first step: ratio 1
    optimizers = []
    for m, z, kind in ((model, zeros[0], Lamb), (twin, zeros[1], ReferenceLamb)):
        groups = parameter_groups(m, 0.01)  # the pair head gets no gradient from this loss: skipped
        groups[0]["params"].append(z)
        optimizers.append(kind(groups, lr=1e-2))
    ids = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(1))
    for _ in range(6):
        for m, z, opt in zip((model, twin), zeros, optimizers):
            opt.zero_grad()
            (m(input_ids=ids).prediction_logits.square().mean() + (z - 1).square().sum()).backward()
            opt.step()
    ours, reference = optimizers
    assert zeros[0].grad is not None and model.sop_classifier.classifier.weight.grad is None
    assert (zeros[0] - zeros[1]).abs().max() <= 1e-6
    for (name, a), b in zip(model.state_dict().items(), twin.state_dict().values()):
        assert (a - b).abs().max() <= 1e-6, name
    for p, q in zip(model.parameters(), twin.parameters()):
        if p.grad is not None:
            s, r = ours.state[p], reference.state[q]
            assert float(s["step"]) == float(r["step"]) == 6
            assert torch.allclose(s["exp_avg"], r["exp_avg"], atol=1e-7) and torch.allclose(s["exp_avg_sq"], r["exp_avg_sq"], atol=1e-9)


def test_compiled_lamb_steps_as_the_eager_one_and_a_new_rate_compiles_nothing():
    """`compile_update` (here through AOTAutograd and eager kernels, the graphs inductor would fuse):
    the weights of the eager LAMB, to the reordering of the norms' sums (as above, far below 1e-6 in
    6 steps at lr 1e-2), with one graph per group however the learning rate changes."""
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    torch.manual_seed(0)
    model, twin = build_model(tiny_spec(50)), build_model(tiny_spec(50))
    twin.load_state_dict(model.state_dict())
    eager, compiled = Lamb(parameter_groups(model, 0.01), lr=1e-2), Lamb(parameter_groups(twin, 0.01), lr=1e-2)
    counter = CompileCounterWithBackend("aot_eager")
    compiled.compile_update(counter)
    ids = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(1))
    graphs = []
    for step in range(6):
        graphs.append(counter.frame_count)
        for m, opt in ((model, eager), (twin, compiled)):
            for group in opt.param_groups:
                group["lr"] = 1e-2 * (step + 1) / 6  # warm-up: a new rate every step
            opt.zero_grad()
            m(input_ids=ids).prediction_logits.square().mean().backward()
            opt.step()
    # the two groups (trust ratio and decay, neither) compile in the first two steps, at most twice each
    # (dynamo's second try makes what changed an input); a new rate then compiles nothing
    assert graphs[2] == counter.frame_count <= 4, graphs
    for p, q in zip(model.parameters(), twin.parameters()):
        assert (p - q).abs().max() <= 1e-6
    assert any((p - q).abs().max() > 0 for p, q in zip(model.parameters(), build_model(tiny_spec(50)).parameters()))
    torch._dynamo.reset()
