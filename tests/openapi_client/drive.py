"""Generates a Python client from a running handler's /api/openapi.json and calls every operation
of the API through it, checking each answer's status and a field or two.

    drive.py BASE_URL WORK_DIR

Run by tests/openapi_client/run.sh, in the virtual environment it makes (openapi-python-client and
openapi-spec-validator, pinned in requirements.txt), against `target/debug/handler` started with
BLOG_AUTH=development: a write acts as the user its `x-dev-user` header names. Fails on the first
thing wrong, naming the operation; then also when an operation of the document was not called,
so a new route needs its call here.
"""

import importlib
import json
import os
import re
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import zlib
from http import HTTPStatus

from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename
from openapi_spec_validator.validation.exceptions import OpenAPISpecValidatorError, OpenAPIValidationError

# How long the change feed's copies (a user's posts, the feed, a tag's posts) may take to show a
# new post: on the embedded store the handler applies its change feed in seconds.
COPIES_WAIT = float(os.environ.get("OPENAPI_CLIENT_WAIT", "60"))

base_url, work = sys.argv[1], sys.argv[2]


def fail(message):
    print(f"openapi client: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


# The document, as the handler serves it, valid OpenAPI 3.1 with one operationId per operation.
with urllib.request.urlopen(f"{base_url}/api/openapi.json") as answer:
    document_bytes = answer.read()
document_path = os.path.join(work, "openapi.json")
with open(document_path, "wb") as file:
    file.write(document_bytes)
document = json.loads(document_bytes)
if not document.get("openapi", "").startswith("3.1."):
    fail(f"the document says it is OpenAPI {document.get('openapi')!r}, not 3.1")
spec, _ = read_from_filename(document_path)
try:
    # Picks the validator from the document's own `openapi` field: OpenAPI 3.1's here.
    validate(spec)
except (OpenAPIValidationError, OpenAPISpecValidatorError) as error:  # its message names the place
    fail(f"openapi-spec-validator refuses the document: {error}")
operation_ids = [
    operation["operationId"]
    for item in document["paths"].values()
    for operation in item.values()
    if isinstance(operation, dict) and "operationId" in operation
]
operation_count = sum(
    1 for item in document["paths"].values() for key in item if key in ("get", "put", "post", "delete", "patch")
)
if len(operation_ids) != operation_count or len(set(operation_ids)) != operation_count:
    fail(f"{operation_count} operations, operationIds {sorted(operation_ids)}: each needs its own")
print(f"openapi client: the document is valid OpenAPI {document['openapi']}, {operation_count} operations")

# The client, generated as its users would: `openapi-python-client generate`. Any warning (a
# piece it could not generate) fails, as a missing operation would.
generated = subprocess.run(
    [
        "openapi-python-client",
        "generate",
        "--path",
        document_path,
        "--meta",
        "none",
        "--output-path",
        "blog_client",
        "--overwrite",
    ],
    check=False,
    cwd=work,
    capture_output=True,
    text=True,
)
if generated.returncode != 0 or "Warning" in generated.stdout + generated.stderr:
    fail(f"openapi-python-client could not generate the client whole:\n{generated.stdout}{generated.stderr}")
sys.path.insert(0, work)
from blog_client import Client
from blog_client.models import (
    AddedPictureBody,
    Comment,
    EditPostBody,
    Like,
    ListPageComment,
    ListPageLike,
    ListPagePost,
    ListPageRevision,
    Me,
    NewCommentBody,
    NewLikeBody,
    NewPostBody,
    Post,
    PostStatus,
    PreviewLink,
    ProblemDetails,
    RevisionRead,
    SearchPage,
    User,
    UserBody,
)
from blog_client.types import File

snake = {re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower(): name for name in operation_ids}
modules = {}
for module_name, operation_id in snake.items():
    found = [
        f"blog_client.api.{tag}.{module_name}"
        for tag in os.listdir(os.path.join(work, "blog_client", "api"))
        if os.path.exists(os.path.join(work, "blog_client", "api", tag, f"{module_name}.py"))
    ]
    if len(found) != 1:
        fail(f"the generated client has {len(found)} modules for {operation_id}")
    modules[operation_id] = importlib.import_module(found[0])
called = set()


def call(operation_id, status, parsed_type, client, *args, **kwargs):
    """Calls `operation_id` through the generated client; its answer must have `status` and parse
    as `parsed_type` (None: no body)."""
    called.add(operation_id)
    answer = modules[operation_id].sync_detailed(*args, client=client, **kwargs)
    if answer.status_code != status:
        fail(f"{operation_id}: {answer.status_code.value} {answer.content[:500]!r}, not {status.value}")
    if parsed_type is not None and not isinstance(answer.parsed, parsed_type):
        fail(f"{operation_id}: {status.value} parsed as {type(answer.parsed).__name__}, not {parsed_type.__name__}")
    print(f"openapi client: {operation_id} {answer.status_code.value}")
    return answer.parsed


def expect(operation_id, what, actual, wanted):
    if actual != wanted:
        fail(f"{operation_id}: {what} is {actual!r}, not {wanted!r}")


def key():
    return str(uuid.uuid4())


def png(width, height):
    """A PNG of two colours, made here (RGB, 8 bits, no filter)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(
        b"\x00" + b"".join(bytes((200, 40, 40) if x < width // 2 else (40, 40, 200)) for x in range(width)) for _ in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def listed_once_copied(operation_id, client, wanted_id, *args):
    """Calls a list of copies until it shows `wanted_id`: the change feed writes the copy after
    the write that caused it is answered."""
    deadline = time.monotonic() + COPIES_WAIT
    while True:
        page = call(operation_id, HTTPStatus.OK, ListPagePost, client, *args, limit=50)
        if wanted_id in [item.id for item in page.items]:
            return
        if time.monotonic() > deadline:
            fail(f"{operation_id}: the post is not listed after {COPIES_WAIT:.0f} s")
        time.sleep(0.25)


run = uuid.uuid4().hex[:8]
author_id, reader_id = f"author-{run}", f"reader-{run}"
anonymous = Client(base_url=base_url, raise_on_unexpected_status=True)
author = Client(base_url=base_url, headers={"x-dev-user": author_id}, raise_on_unexpected_status=True)
reader = Client(base_url=base_url, headers={"x-dev-user": reader_id}, raise_on_unexpected_status=True)

me = call("getMe", HTTPStatus.OK, Me, author)
expect("getMe", "userId", me.user_id, author_id)
user = call("createUser", HTTPStatus.CREATED, User, author, body=UserBody(username=f"Author {run}"), idempotency_key=key())
expect("createUser", "id", user.id, author_id)
expect("createUser", "username", user.username, f"Author {run}")
call("createUser", HTTPStatus.CREATED, User, reader, body=UserBody(username=f"Reader {run}"))
user = call("editUser", HTTPStatus.OK, User, author, author_id, body=UserBody(username=f"Writer {run}"), idempotency_key=key())
expect("editUser", "username", user.username, f"Writer {run}")
user = call("getUser", HTTPStatus.OK, User, anonymous, author_id)
expect("getUser", "username", user.username, f"Writer {run}")

tag = f"OpenAPI-{run}"
post = call(
    "createPost",
    HTTPStatus.CREATED,
    Post,
    author,
    body=NewPostBody(user_id=author_id, title="A client", content="Generated from the description.", tags=[tag]),
    idempotency_key=key(),
)
expect("createPost", "userId", post.user_id, author_id)
expect("createPost", "tags", post.tags, [tag])
post_id = post.id
post = call(
    "editPost",
    HTTPStatus.OK,
    Post,
    author,
    post_id,
    body=EditPostBody(title="A generated client", content="Every operation, called."),
    idempotency_key=key(),
)
expect("editPost", "title", post.title, "A generated client")
expect("editPost", "tags (kept when not sent)", post.tags, [tag])

# The edit kept the version it replaced: its author lists it, reads what changed, and restores it
# (itself an edit, so the restore keeps a revision too).
revisions = call("listRevisions", HTTPStatus.OK, ListPageRevision, author, post_id, limit=10)
expect("listRevisions", "numbers", [item.number for item in revisions.items], [0])
expect("listRevisions", "title", revisions.items[0].title, "A client")
read = call("getRevision", HTTPStatus.OK, RevisionRead, author, post_id, 0)
expect("getRevision", "titleNow", read.title_now, "A generated client")
expect(
    "getRevision",
    "changes",
    [(line.change, line.line) for line in read.changes],
    [("removed", "Generated from the description."), ("added", "Every operation, called.")],
)
post = call("restoreRevision", HTTPStatus.OK, Post, author, post_id, 0, idempotency_key=key())
expect("restoreRevision", "title", post.title, "A client")
problem = call("listRevisions", HTTPStatus.FORBIDDEN, ProblemDetails, reader, post_id)
expect("listRevisions (someone else's post)", "status", problem.status, 403)

# A draft: in its author's list of drafts, shown by a preview link until that is revoked.
draft = call(
    "createPost",
    HTTPStatus.CREATED,
    Post,
    author,
    body=NewPostBody(user_id=author_id, title="Not yet", content="A draft.", status=PostStatus.DRAFT),
    idempotency_key=key(),
)
expect("createPost (a draft)", "status", draft.status, PostStatus.DRAFT)
# The list of drafts is a copy in the author's partition of `users`, made by the change feed.
listed_once_copied("listUserDrafts", author, draft.id, author_id)
link = call("sharePreview", HTTPStatus.CREATED, PreviewLink, author, draft.id)
with urllib.request.urlopen(f"{base_url}{link.path}") as answer:
    expect("sharePreview", "the preview page's status", answer.status, 200)
call("revokePreview", HTTPStatus.NO_CONTENT, None, author, draft.id)
try:
    urllib.request.urlopen(f"{base_url}{link.path}")
    fail("revokePreview: the preview link still answers")
except urllib.error.HTTPError as error:
    expect("revokePreview", "the revoked link's status", error.code, 404)
call("deletePost", HTTPStatus.NO_CONTENT, None, author, draft.id, idempotency_key=key())
picture = call(
    "uploadPicture",
    HTTPStatus.CREATED,
    AddedPictureBody,
    author,
    post_id,
    body=File(payload=png(64, 48), file_name="kite.png", mime_type="application/octet-stream"),
    alt="Two colours",
)
expect("uploadPicture", "size", (picture.width, picture.height), (64, 48))
expect("uploadPicture", "markdown", picture.markdown, f"![Two colours]({picture.url})")

comment = call(
    "createComment",
    HTTPStatus.CREATED,
    Comment,
    reader,
    post_id,
    body=NewCommentBody(user_id=reader_id, content="Works."),
    idempotency_key=key(),
)
expect("createComment", "postId", comment.post_id, post_id)
expect("createComment", "userUsername", comment.user_username, f"Reader {run}")
comments = call("listComments", HTTPStatus.OK, ListPageComment, anonymous, post_id, limit=10)
expect("listComments", "ids", [item.id for item in comments.items], [comment.id])
like = call("createLike", HTTPStatus.CREATED, Like, reader, post_id, body=NewLikeBody(user_id=reader_id), idempotency_key=key())
expect("createLike", "userId", like.user_id, reader_id)
likes = call("listLikes", HTTPStatus.OK, ListPageLike, anonymous, post_id, limit=10)
expect("listLikes", "userIds", [item.user_id for item in likes.items], [reader_id])
post = call("getPost", HTTPStatus.OK, Post, reader, post_id)
expect("getPost", "counters", (post.comment_count, post.like_count), (1, 1))
expect("getPost", "userUsername", post.user_username, f"Writer {run}")

# The lists of copies, made by the change feed: each shows the post once its copy is written.
for operation_id, args in [("listUserPosts", (author_id,)), ("listFeed", ()), ("listTagPosts", (tag.lower(),))]:
    listed_once_copied(operation_id, anonymous, post_id, *args)

# Q8: the post found by a word of its title once the change feed has indexed it.
deadline = time.monotonic() + COPIES_WAIT
while True:
    found = call("searchPosts", HTTPStatus.OK, SearchPage, anonymous, q="generated", limit=5)
    if post_id in [item.post.id for item in found.items]:
        break
    if time.monotonic() > deadline:
        fail(f"searchPosts: the post is not found after {COPIES_WAIT:.0f} s")
    time.sleep(0.25)
problem = call("searchPosts", HTTPStatus.BAD_REQUEST, ProblemDetails, anonymous, q="***")
expect("searchPosts (only punctuation)", "status", problem.status, 400)

# An error is a problem the client parses: another user's post is not the reader's to delete.
problem = call("deletePost", HTTPStatus.FORBIDDEN, ProblemDetails, reader, post_id)
expect("deletePost (someone else's)", "status", problem.status, 403)
call("deleteLike", HTTPStatus.NO_CONTENT, None, reader, post_id, reader_id, idempotency_key=key())
call("deleteComment", HTTPStatus.NO_CONTENT, None, reader, post_id, comment.id, idempotency_key=key())
call("deletePost", HTTPStatus.NO_CONTENT, None, author, post_id, idempotency_key=key())
problem = call("getPost", HTTPStatus.NOT_FOUND, ProblemDetails, anonymous, post_id)
expect("getPost (deleted)", "status", problem.status, 404)

missed = sorted(set(operation_ids) - called)
if missed:
    fail(f"not called through the client: {', '.join(missed)}")
print(f"openapi client: ok, all {len(called)} operations called through the generated client")
