/**
 * The article's post-trigger `truncateFeed`, on `feed`: every write into `feed` names it, and it
 * keeps `feed` at the newest 100 posts (by creationDate, then id), in the same transaction as
 * the write.
 *
 * Changed from the article's version:
 * - no count query plus "+ 1 for the document being written" (wrong for a replace): it reads the
 *   posts other than the written one from the 100th newest on, newest first;
 * - a write of a post older than the newest 100 (an edit, or a counter change, of an old post)
 *   is refused by throwing, which rolls the write back: an old post never re-enters the feed,
 *   and the feed never grows past 100. The message starts with "notAmongNewest" so that the
 *   writer can tell this outcome from a failure;
 * - otherwise the posts beyond the newest 100 are deleted, all of them, not only one.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function truncateFeed() {
    var MAX_POSTS = 100;
    var collection = getContext().getCollection();
    var written = getContext().getRequest().getBody();
    var query = {
        // (NOT IS_DEFINED(f.scriptFence): where this script runs in process, the feed's partition
        // also holds a fence item; on Cosmos DB there is none.)
        query: "SELECT * FROM f WHERE f.type = 'post' AND f.id != @id AND NOT IS_DEFINED(f.scriptFence) " +
            "ORDER BY f.creationDate DESC, f.id DESC OFFSET " + (MAX_POSTS - 1) + " LIMIT 1000",
        parameters: [{ name: "@id", value: written.id }]
    };

    accepted(collection.queryDocuments(collection.getSelfLink(), query, function (err, beyond) {
        if (err) throw err;
        // `beyond` are the other posts from the 100th newest on. If the written post is older
        // than the first of them, 100 others are newer: it does not belong in the feed.
        if (beyond.length > 0 && isOlder(written, beyond[0])) {
            throw new Error("notAmongNewest: post " + written.id + " is older than the newest " + MAX_POSTS);
        }
        remove(beyond, 0);
    }));

    function remove(posts, index) {
        if (index === posts.length) return;
        accepted(collection.deleteDocument(collection.getAltLink() + "/docs/" + posts[index].id, function (err) {
            if (err) throw err;
            remove(posts, index + 1);
        }));
    }

    function isOlder(a, b) {
        if (a.creationDate !== b.creationDate) return a.creationDate < b.creationDate;
        return a.id < b.id;
    }

    function accepted(isAccepted) {
        if (!isAccepted) throw new Error("truncateFeed: the database did not accept the operation");
    }
}
