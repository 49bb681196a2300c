"""Page-image references a person can open: the blob store's file path (embedded) or gs:// URI (cloud) of a page
image and its thumbnail, for citations, related passages and page candidates."""

from __future__ import annotations


def blob_uri(ctx, key: str) -> str:
    """Where blob `key` can be opened: a local file path (local blob store) or gs://<bucket>/<key>."""
    local = ctx.blobstore.local_path(key)
    if local is not None:
        return str(local)
    return f"gs://{ctx.settings.gcs_bucket}/{key}"


def blob_key(ctx, ref: str) -> str | None:
    """The blob key of a reference made by `blob_uri`, None when it points outside the blob store."""
    import os
    bucket = f"gs://{ctx.settings.gcs_bucket}/"
    if ctx.settings.gcs_bucket and ref.startswith(bucket):
        key = ref[len(bucket):]
    else:
        root = ctx.blobstore.local_path("pages")
        if root is None:
            return None
        base = os.path.realpath(root.parent)
        real = os.path.realpath(ref)
        if not real.startswith(base + os.sep):
            return None
        key = os.path.relpath(real, base).replace(os.sep, "/")
    return None if ".." in key.split("/") else key


def page_refs(ctx, snap, source: str, page: int) -> dict:
    """{"image": uri, "thumbnail": uri} of a page of the snapshot version, {} when it has no page image."""
    entry = snap.page_image(source, page)
    if not entry:
        return {}
    return {"image": blob_uri(ctx, entry["image"]), "thumbnail": blob_uri(ctx, entry["thumbnail"])}


def attach(ctx, snap, items: list[dict]) -> list[dict]:
    """`items` (citations or related passages: dicts with source or chunk_id, and page) with page_refs added
    where their page has an image."""
    for it in items:
        source = it.get("source")
        if source is None and it.get("chunk_id") in snap.row_of:
            source = snap.chunks[snap.row_of[it["chunk_id"]]]["source"]
        if source is not None and it.get("page") is not None:
            it.update(page_refs(ctx, snap, source, int(it["page"])))
    return items
