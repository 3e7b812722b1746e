import sys, json, torch, torch.nn.functional as F
from shared_models import TOKENIZER; from tok import Tokenizer
tk = Tokenizer.load(TOKENIZER); EOT = tk.eot
def encode_example(x):
    """bos + prompt + response + eos; returns ids and the index where the response starts (loss from there on)"""
    p = [EOT] + tk.encode(x['prompt']); r = tk.encode(x['response']) + [EOT]
    return p + r, len(p)
def load_jsonl(path): return [json.loads(l) for l in open(path)]
def batch_loss(m, exs):
    """mean cross-entropy over response tokens of a list of encoded (ids, start) examples, right-padded"""
    T = max(len(ids) for ids, _ in exs) - 1
    x = torch.zeros(len(exs), T, dtype=torch.long); y = torch.full((len(exs), T), -100, dtype=torch.long)
    for i, (ids, s) in enumerate(exs):
        t = torch.tensor(ids); n = len(ids) - 1
        x[i, :n] = t[:-1]; y[i, s - 1:n] = t[s:]
    logits = m(x)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=-100, reduction='sum'), int((y != -100).sum())
