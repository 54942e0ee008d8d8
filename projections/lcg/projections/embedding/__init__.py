"""Embeddings: the Embedder port, the bundled MiniLM ONNX model, the content-addressed cache."""
