/**
 * The article's stored procedure `updateUsernames`, on `posts`: after a user renamed themselves,
 * rewrite `userUsername` on that user's posts, comments and likes in ONE post partition (a
 * stored procedure runs inside one logical partition; the caller runs it once per post that
 * holds items of the user).
 *
 * Changed from the article's version:
 * - the query is parameterized (the article concatenated the user id into the SQL text), and
 *   skips a deleted post's tombstone (C7), which no one reads;
 * - it selects only the items that still carry another name, so it never rewrites an item that
 *   is already correct, and running it again is harmless;
 * - its work is bounded: when the database stops accepting operations (`isAccepted` false) it
 *   ends, committing what it did, and answers {done: false}; the caller runs it again, and the
 *   query, which skips the items already rewritten, picks up the rest;
 * - before it rewrites a page of items that are not the post, it writes the post again, so that
 *   the post's etag changes in the same transaction as its comments' and likes' names, with the
 *   version of each list the page renames in (`commentsVersion`, `likesVersion`) set to the etag
 *   the post had: the post page's cache is checked by that etag, and reads again the lists
 *   whose versions moved (src/app/kept/post_views.rs). Done first, so a run stopped after it rewrote
 *   nothing has names left to rewrite, and the next run writes the post again; a deleted post's
 *   tombstone is left as it is. The post itself is renamed as this run last wrote it, read
 *   again: a query may answer the version before, without the versions moved.
 * The body answers {updated: <items rewritten>, done: <true when none is left>}.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function updateUsernames(userId, username) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();
    var query = {
        query: "SELECT * FROM c WHERE c.userId = @userId AND c.userUsername != @username AND NOT IS_DEFINED(c.deleted)",
        parameters: [{ name: "@userId", value: userId }, { name: "@username", value: username }]
    };
    var updated = 0;

    if (typeof userId !== "string" || typeof username !== "string") {
        throw new Error("updateUsernames: userId and username must be strings");
    }

    queryPage(undefined);

    function queryPage(continuation) {
        var accepted = collection.queryDocuments(collection.getSelfLink(), query, { continuation: continuation },
            function (err, items, options) {
                if (err) throw err;
                touchPostThenRewrite(items, options.continuation);
            });
        if (!accepted) finish(false);
    }

    // Writes the post again, with the versions of the lists `items` renames in moved, when it
    // holds a comment or like (the post itself, if among them, is rewritten anyway), then
    // rewrites them.
    function touchPostThenRewrite(items, continuation) {
        var others = items.filter(function (item) { return item.id !== item.postId; });
        if (others.length === 0) {
            rewrite(items, 0, continuation);
            return;
        }
        var accepted = collection.readDocument(collection.getAltLink() + "/docs/" + others[0].postId, function (err, post) {
            if (err && err.number === 404) {
                rewrite(items, 0, continuation);
                return;
            }
            if (err) throw err;
            if (post.deleted) {
                rewrite(items, 0, continuation);
                return;
            }
            others.forEach(function (item) {
                if (item.type === "comment") post.commentsVersion = post._etag;
                if (item.type === "like") post.likesVersion = post._etag;
            });
            var replaced = collection.replaceDocument(post._self, post, function (err) {
                if (err) throw err;
                rewrite(items, 0, continuation);
            });
            if (!replaced) finish(false);
        });
        if (!accepted) finish(false);
    }

    function rewrite(items, index, continuation) {
        if (index === items.length) {
            if (continuation) queryPage(continuation);
            else finish(true);
            return;
        }
        var item = items[index];
        if (item.id !== item.postId) {
            rename(item, items, index, continuation);
            return;
        }
        var read = collection.readDocument(collection.getAltLink() + "/docs/" + item.id, function (err, post) {
            if (err) throw err;
            rename(post, items, index, continuation);
        });
        if (!read) finish(false);
    }

    function rename(item, items, index, continuation) {
        item.userUsername = username;
        var accepted = collection.replaceDocument(item._self, item, function (err) {
            if (err) throw err;
            updated += 1;
            rewrite(items, index + 1, continuation);
        });
        if (!accepted) finish(false);
    }

    function finish(done) {
        response.setBody({ updated: updated, done: done });
    }
}
