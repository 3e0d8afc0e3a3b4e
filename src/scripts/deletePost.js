/**
 * C7, stored procedure `deletePost` on `posts`, executed in the partition of the post
 * (partition key = postId). Resumable: call it again until it answers `done: true`.
 *
 * The first call turns the post into a tombstone: `deleted: true`, a `ttl` (seconds) after which
 * Cosmos DB removes it, and no title, content or counts. The change feed never delivers a
 * deletion, but it does deliver this update: `PostsChangeFeed` then deletes the post's copies
 * in `users` and `feed`. From that write on, every read treats the post as missing, and
 * `createComment` and `createLike` refuse it, so its comments and likes can only decrease.
 * Then, in the same call and the calls after it, it deletes the post's comments, likes and revisions,
 * as many as the database accepts per call (`isAccepted`): each call commits what it did, and a
 * post of any size is deleted in bounded pieces. A caller that stops early leaves a tombstone
 * that `PostsChangeFeed`, or a repeated DELETE, finishes.
 *
 * Only the post's author may (`callerId`). The body answers {outcome: "postNotFound"},
 * {outcome: "forbidden"}, or {outcome: "deleted", marked: <this call made the tombstone>,
 * removed: <comments and likes deleted by this call>, done: <none is left>}.
 * `request`, optional: the record of the caller's Idempotency-Key (see `firstTime`, keyed_helpers.js); a request
 * sent again with its key answers {outcome: "repeated", request: <the record>} and writes nothing.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function deletePost(postId, callerId, ttl, request) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();
    var procedure = "deletePost";
    var query = { query: "SELECT * FROM c WHERE c.type = 'comment' OR c.type = 'like' OR c.type = 'revision'" };
    var marked = false;
    var removed = 0;

    if (typeof postId !== "string" || typeof callerId !== "string" || typeof ttl !== "number" || ttl < 1) {
        throw new Error("deletePost: postId and callerId must be strings, ttl a number of seconds");
    }

    firstTime(function () {
        accepted(collection.readDocument(collection.getAltLink() + "/docs/" + postId, function (err, post) {
            if (err && err.number === 404) {
                response.setBody({ outcome: "postNotFound" });
                return;
            }
            if (err) throw err;
            if (post.type !== "post") {
                response.setBody({ outcome: "postNotFound" });
                return;
            }
            if (post.userId !== callerId) {
                response.setBody({ outcome: "forbidden" });
                return;
            }
            if (post.deleted) {
                remembered(function () { queryPage(undefined); });
                return;
            }
            var tombstone = {
                id: post.id, type: "post", postId: post.postId, userId: post.userId, userUsername: post.userUsername,
                title: "", content: "", commentCount: 0, likeCount: 0, creationDate: post.creationDate,
                deleted: true, ttl: ttl
            };
            accepted(collection.replaceDocument(post._self, tombstone, function (err) {
                if (err) throw err;
                marked = true;
                // The request record is created with the tombstone, before the comments and
                // likes: a run ends where the database stops accepting operations, and the
                // record must be in the run that does the deletion.
                remembered(function () { queryPage(undefined); });
            }));
        }));
    });

    function queryPage(continuation) {
        var isAccepted = collection.queryDocuments(collection.getSelfLink(), query, { continuation: continuation },
            function (err, items, options) {
                if (err) throw err;
                remove(items, 0, options.continuation);
            });
        if (!isAccepted) finish(false);
    }

    function remove(items, index, continuation) {
        if (index === items.length) {
            if (continuation) queryPage(continuation);
            else finish(true);
            return;
        }
        var isAccepted = collection.deleteDocument(items[index]._self, function (err) {
            if (err) throw err;
            removed += 1;
            remove(items, index + 1, continuation);
        });
        if (!isAccepted) finish(false);
    }

    function finish(done) {
        response.setBody({ outcome: "deleted", marked: marked, removed: removed, done: done });
    }

    // The helpers every keyed procedure shares (keyed_helpers.js) take the place of the next line.
"keyed_helpers.js";
}
