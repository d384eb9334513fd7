"""Runs a tgc model file (JSON form) in PyTorch: the numerical reference.

The graph is interpreted op by op with the semantics of the tg dialect
(dialects/tg/IR/*.td), the optimizer and schedule are PyTorch's, so a loss
curve from here is what PyTorch gives for the same model, weights and data.
"""

import math

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "i32": torch.int32, "i64": torch.int64, "i1": torch.bool}


def _attrs(node):
    out = {}
    for a in node.get("attrs", []):
        for key in ("i", "f", "b", "s", "ints", "floats"):
            if key in a:
                out[a["name"]] = a[key]
    return out


def attention(q, k, v, mask=None, causal=False, scale=None):
    """tg.attention: grouped-query heads (query head h reads key/value head
    h // (H // Hkv)), an additive mask broadcast to the scores, and zeros
    (with zero gradients) for a query whose scores are all -inf, where a
    plain softmax gives NaN."""
    T, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    group = q.shape[-3] // k.shape[-3]
    k = k.repeat_interleave(group, dim=-3)
    v = v.repeat_interleave(group, dim=-3)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    att = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        att = att + mask
    if causal:
        t = torch.arange(T).view(T, 1)
        s = torch.arange(S).view(1, S)
        att = att.masked_fill(s > t + (S - T), float("-inf"))
    blind = torch.isneginf(att).all(dim=-1, keepdim=True)
    att = att.masked_fill(blind, 0.0)
    p = torch.softmax(att, dim=-1).masked_fill(blind, 0.0)
    return torch.matmul(p, v)


def run_op(op, args, a):
    """One tg op on torch tensors."""
    if op == "matmul":
        x, y = args
        if a.get("transpose_lhs"):
            x = x.transpose(-1, -2)
        if a.get("transpose_rhs"):
            y = y.transpose(-1, -2)
        return torch.matmul(x, y)
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
              "div": torch.div, "pow": torch.pow, "maximum": torch.maximum,
              "minimum": torch.minimum}
    if op in binary:
        return binary[op](*args)
    if op == "compare":
        return {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
                "gt": torch.gt, "ge": torch.ge}[a["predicate"]](*args)
    if op == "select":
        return torch.where(*args)
    unary = {"neg": torch.neg, "abs": torch.abs, "exp": torch.exp,
             "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
             "tanh": torch.tanh, "relu": torch.relu, "silu": F.silu,
             "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos}
    if op in unary:
        return unary[op](args[0])
    if op == "gelu":
        return F.gelu(args[0], approximate=a.get("approximate", "none"))
    if op == "cast":
        return args[0].to(DTYPES[a["dtype"]])
    if op in ("reduce_sum", "reduce_mean", "reduce_max"):
        x = args[0]
        dims = a.get("dims") or list(range(x.dim()))
        keep = bool(a.get("keepdim", False))
        if op == "reduce_sum":
            return torch.sum(x, dim=dims, keepdim=keep)
        if op == "reduce_mean":
            return torch.mean(x, dim=dims, keepdim=keep)
        return torch.amax(x, dim=dims, keepdim=keep)
    if op == "softmax":
        return torch.softmax(args[0], dim=a.get("axis", -1))
    if op == "log_softmax":
        return torch.log_softmax(args[0], dim=a.get("axis", -1))
    if op == "layer_norm":
        x = args[0]
        w = args[1] if len(args) > 1 else None
        b = args[2] if len(args) > 2 else None
        return F.layer_norm(x, (x.shape[-1],), w, b, a.get("eps", 1e-5))
    if op == "rms_norm":
        x = args[0]
        y = x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True)
                            + a.get("eps", 1e-6))
        return y * args[1] if len(args) > 1 else y
    if op == "dropout":
        if a.get("p", 0.1) != 0:
            raise ValueError("dropout masks differ between backends: use p=0")
        return args[0]
    if op == "embedding":
        return F.embedding(args[1].long(), args[0])
    if op == "cross_entropy":
        logits, labels = args
        C = logits.shape[-1]
        red = a.get("reduction", "mean")
        out = F.cross_entropy(logits.reshape(-1, C), labels.reshape(-1).long(),
                              ignore_index=a.get("ignore_index", -100),
                              reduction=red)
        return out.reshape(labels.shape) if red == "none" else out
    if op == "attention":
        return attention(*args, causal=bool(a.get("causal", False)),
                         scale=a.get("scale"))
    if op == "conv2d":
        bias = args[2] if len(args) > 2 else None
        return F.conv2d(args[0], args[1], bias, tuple(a.get("stride", [1, 1])),
                        tuple(a.get("padding", [0, 0])),
                        tuple(a.get("dilation", [1, 1])), a.get("groups", 1))
    if op in ("max_pool2d", "avg_pool2d"):
        k = tuple(a["kernel_size"])
        s = tuple(a.get("stride", k))
        p = tuple(a.get("padding", [0, 0]))
        if op == "max_pool2d":
            return F.max_pool2d(args[0], k, s, p)
        return F.avg_pool2d(args[0], k, s, p, count_include_pad=False)
    if op == "flatten":
        return torch.flatten(args[0], a.get("start_dim", 1), a.get("end_dim", -1))
    if op == "reshape":
        return args[0].reshape(a["shape"])
    if op == "transpose":
        return args[0].permute(*a["perm"])
    if op == "slice":
        stride = a.get("stride") or [1] * len(a["start"])
        # A limit of -1 is the dim's end (as tgc imports it).
        index = tuple(slice(s, None if l == -1 else l, st) for s, l, st in
                      zip(a["start"], a["limit"], stride))
        return args[0][index]
    if op == "concat":
        return torch.cat(args, dim=a.get("axis", 0))
    if op == "broadcast_to":
        return torch.broadcast_to(args[0], a["shape"])
    if op == "constant":
        dtype = DTYPES[a.get("dtype", "f32")]
        value = a.get("value")
        return torch.full(a.get("shape", []), value, dtype=dtype)
    if op == "iota":
        # start + step * index along `dimension`, in f32 for float results
        # (as the backends compute it).
        shape = a["shape"]
        dim = a.get("dimension", 0) % len(shape)
        dtype = DTYPES[a.get("dtype", "f32")]
        index = torch.arange(shape[dim])
        if dtype.is_floating_point:
            values = (torch.tensor(a.get("start", 0.0), dtype=torch.float32) +
                      torch.tensor(a.get("step", 1.0), dtype=torch.float32) *
                      index.to(torch.float32)).to(dtype)
        else:
            values = (int(a.get("start", 0)) +
                      int(a.get("step", 1)) * index).to(dtype)
        view = [1] * len(shape)
        view[dim] = shape[dim]
        return values.reshape(view).expand(shape).contiguous()
    raise ValueError("no torch reference for op " + op)


class Model:
    """The model file's graph over named torch tensors."""

    def __init__(self, spec, batch_size=None, seq_len=None):
        self.spec = spec
        self.training = spec.get("training", {})
        self.batch_size = batch_size or self.training.get("batch_size")
        self.seq_len = seq_len or self.training.get("seq_len")
        self.param_names = [p["name"] for p in spec.get("params", [])]
        self.trainable = {p["name"]: p.get("trainable", True)
                          for p in spec.get("params", [])}

    def forward(self, params, inputs):
        """Returns (loss, {name: tensor}) for every tensor in the graph."""
        env = dict(params)
        env.update(inputs)
        pending = list(self.spec["nodes"])
        while pending:
            progressed = False
            for node in list(pending):
                if all(i in env for i in node.get("inputs", [])):
                    result = run_op(node["op"],
                                    [env[i] for i in node.get("inputs", [])],
                                    _attrs(node))
                    outs = node.get("outputs", [])
                    if len(outs) == 1:
                        env[outs[0]] = result
                    else:
                        for name, value in zip(outs, result):
                            env[name] = value
                    pending.remove(node)
                    progressed = True
            if not progressed:
                raise ValueError("graph has a cycle or a dangling input")
        return env[self.spec["loss"]], env


def schedule_factor(sched, step, steps):
    """The LR multiplier at `step` (from 1), as tg.lr_schedule computes it."""
    kind = sched.get("kind") or "constant"
    warmup = sched.get("warmup_steps", 0)
    total = sched.get("total_steps", 0) or steps
    min_lr = sched.get("min_lr", 0.0)
    if warmup > 0 and step <= warmup:
        return ("warmup", step / warmup)
    if kind == "constant":
        return ("scale", 1.0)
    if kind == "cosine":
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return ("cosine", progress, min_lr)
    if kind == "linear":
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return ("linear", progress, min_lr)
    raise ValueError("schedule %s not modelled here" % kind)


def lr_at(sched, step, steps, base_lr):
    f = schedule_factor(sched, step, steps)
    if f[0] == "warmup":
        return base_lr * f[1]
    if f[0] == "scale":
        return base_lr * f[1]
    progress, min_lr = f[1], f[2]
    if f[0] == "cosine":
        return min_lr + (base_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))
    return base_lr + (min_lr - base_lr) * progress


def make_optimizer(model, params, lr):
    """torch.optim for the training table, with no_decay param groups."""
    import fnmatch
    opt = model.training.get("optimizer", {})
    kind = opt.get("kind") or "adamw"
    wd = opt.get("weight_decay", 0.0)
    patterns = opt.get("no_decay", [])
    decay, no_decay = [], []
    for name in model.param_names:
        if not model.trainable[name]:
            continue
        (no_decay if any(fnmatch.fnmatchcase(name, p) for p in patterns)
         else decay).append(params[name])
    groups = [{"params": decay, "weight_decay": wd},
              {"params": no_decay, "weight_decay": 0.0}]
    betas = (opt.get("beta1", 0.9), opt.get("beta2", 0.999))
    eps = opt.get("eps", 1e-8)
    if kind == "adamw":
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)
    if kind == "adam":
        return torch.optim.Adam(groups, lr=lr, betas=betas, eps=eps)
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=opt.get("momentum", 0.0),
                               nesterov=opt.get("nesterov", False))
    raise ValueError("optimizer %s not modelled here" % kind)
