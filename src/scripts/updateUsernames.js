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
 *   query, which skips the items already rewritten, picks up the rest.
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
                rewrite(items, 0, options.continuation);
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
