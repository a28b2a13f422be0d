"""Perplexity of GGUF models on a text, and how often each one's most likely next token is the
first model's: how much a conversion of a model's weights changes it. Runs with the test
server's virtual environment (llama-cpp-python), which ./scripts/setup.sh test installs:

    ~/.cache/simulacra/venv/bin/python bench/perplexity.py TEXT MODEL [MODEL ...]

The first 3,000 tokens of TEXT are read in chunks of 1,000, 2 threads.
"""
import sys

import llama_cpp
import numpy as np


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    text = open(sys.argv[1], encoding="utf-8").read()[:12000]
    tops = {}
    for path in sys.argv[2:]:
        llm = llama_cpp.Llama(model_path=path, n_ctx=4096, logits_all=True, verbose=False, n_threads=2)
        toks = llm.tokenize(text.encode())[:3000]
        nll, top = [], []
        for s in range(0, len(toks) - 1, 1000):
            chunk = toks[s : s + 1001]
            llm.reset()
            llm.eval(chunk)
            lg = np.array(llm.scores[: len(chunk) - 1], dtype=np.float64)
            lg -= lg.max(axis=1, keepdims=True)
            lp = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
            nll += list(-lp[np.arange(len(chunk) - 1), chunk[1:]])
            top += list(lp.argmax(axis=1))
        tops[path] = np.array(top)
        print(f"{path}: perplexity {np.exp(np.mean(nll)):.3f} over {len(nll)} tokens", flush=True)
    first = tops[sys.argv[2]]
    for path, t in tops.items():
        print(f"{path}: most likely next token as the first model's {100 * (t == first).mean():.1f}%")


if __name__ == "__main__":
    main()
