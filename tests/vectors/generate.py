"""Regenerates master_key_signatures.json with the official Python SDK (azure-cosmos).

The Rust test `tests/server_scripts.rs` checks that our master-key `authorization` header is
byte for byte what Microsoft's own SDK produces for the same request. The expectations come from
the SDK's code, not from ours, so a mistake in our reading of the REST docs shows up here:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install azure-cosmos
    /tmp/venv/bin/python tests/vectors/generate.py   # from the repository root

For each case the SDK derives the signed resource link from the link it is given, exactly as its
`ExecuteStoredProcedure`, `CreateItem`/`UpsertItem` (`_GetContainerIdWithPathForItem`) and
`ReplaceItem` do, then builds the header with `auth._get_authorization_header` and quotes it the
way `_base.GetHeaders` does.
"""

import base64
import hashlib
import json
import pathlib
from importlib.metadata import version
from types import SimpleNamespace
from urllib.parse import quote

from azure.cosmos import _base, auth, http_constants

# The Cosmos DB emulator's published well-known key, plus two derived from fixed seeds.
EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
KEY_A = base64.b64encode(hashlib.sha512(b"cosmos-blog vector key A").digest()).decode()
KEY_B = base64.b64encode(hashlib.sha256(b"cosmos-blog vector key B").digest()).decode()

SPROC = http_constants.ResourceType.StoredProcedure  # "sprocs"
DOCS = http_constants.ResourceType.Document  # "docs"

# (what, verb, resource type, link as the SDK method receives it, x-ms-date, key)
CASES = [
    ("execute createLike", "POST", SPROC, "dbs/blog/colls/posts/sprocs/createLike", "Tue, 01 Apr 2025 10:00:00 GMT", EMULATOR_KEY),
    ("execute createComment", "POST", SPROC, "dbs/blog/colls/posts/sprocs/createComment", "Wed, 31 Dec 2025 23:59:59 GMT", KEY_A),
    ("execute updateUsernames", "POST", SPROC, "dbs/blog/colls/posts/sprocs/updateUsernames", "Thu, 01 Jan 2026 00:00:00 GMT", KEY_B),
    ("create or upsert in feed", "POST", DOCS, "dbs/blog/colls/feed", "Fri, 02 Jan 2026 08:07:06 GMT", EMULATOR_KEY),
    ("create in feed, other key", "POST", DOCS, "dbs/blog/colls/feed", "Sat, 03 Jan 2026 12:34:56 GMT", KEY_A),
    ("replace in feed", "PUT", DOCS, "dbs/blog/colls/feed/docs/0f8fad5b-d9cb-469f-a165-70867728950e", "Sun, 04 Jan 2026 01:02:03 GMT", EMULATOR_KEY),
    ("replace in feed, other key", "PUT", DOCS, "dbs/blog/colls/feed/docs/7c9e6679-7425-40de-944b-e07fc1f90ae7", "Mon, 05 Jan 2026 21:22:23 GMT", KEY_B),
    # Names keep their case in the signature (only the verb, type and date are lowercased).
    ("mixed-case names", "POST", SPROC, "dbs/BlogDB/colls/Posts/sprocs/createLike", "Tue, 06 Jan 2026 09:09:09 GMT", KEY_A),
    ("mixed-case document id", "PUT", DOCS, "dbs/blog/colls/feed/docs/Post-ABC", "Wed, 07 Jan 2026 10:10:10 GMT", EMULATOR_KEY),
]


def signed_link(link):
    """The resource link the SDK signs: the link it was given, without its outer slashes. For a
    create or upsert that is the container's link (`_GetContainerIdWithPathForItem`), for a
    replace the document's (`ReplaceItem`), for an execution the procedure's
    (`ExecuteStoredProcedure`); names keep their case."""
    return _base.GetResourceIdOrFullNameFromLink(link)


def url_path(resource_type, link, verb):
    if resource_type == DOCS and verb == "POST":
        return _base.GetPathFromLink(link, DOCS)
    return _base.GetPathFromLink(link)


def authorization(verb, resource_type, link, date, key):
    connection = SimpleNamespace(master_key=key, resource_tokens=None)
    headers = {http_constants.HttpHeaders.XDate: date}
    resource_id = signed_link(link)
    header = auth._get_authorization_header(  # pylint: disable=protected-access
        connection, verb.lower(), url_path(resource_type, link, verb), resource_id,
        _base.IsNameBased(resource_id), resource_type, headers)
    return resource_id, quote(header, "-_.!~*'()")  # as _base.GetHeaders does


def main():
    vectors = []
    for what, verb, resource_type, link, date, key in CASES:
        resource_link, header = authorization(verb, resource_type, link, date, key)
        vectors.append({
            "what": what,
            "verb": verb,
            "resource_type": resource_type,
            "resource_link": resource_link,
            "path": url_path(resource_type, link, verb),
            "date": date,
            "key": key,
            "authorization": header,
        })
    out = pathlib.Path(__file__).with_name("master_key_signatures.json")
    document = {
        "generator": "tests/vectors/generate.py with azure-cosmos " + version("azure-cosmos"),
        "vectors": vectors,
    }
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {len(vectors)} vectors to {out}")


if __name__ == "__main__":
    main()
