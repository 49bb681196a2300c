"""relayrag: serverless Advanced-RAG for Google Cloud, runnable embedded on one machine."""

__version__ = "0.1.0"
