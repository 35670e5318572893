"""Shared by the hub tools: a tiny in-memory record store."""

RECORDS = [
    {"id": 1, "name": "Ada", "tags": ["math", "engines"]},
    {"id": 2, "name": "Grace", "tags": ["compilers"]},
    {"id": 3, "name": "Edsger", "tags": ["math", "compilers"]},
]


def search(query, tags, limit):
    hits = [r for r in RECORDS if query.lower() in r["name"].lower()]
    if tags:
        hits = [r for r in hits if set(tags) & set(r["tags"])]
    return hits[:limit]
