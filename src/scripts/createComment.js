/**
 * C3, the article's stored procedure `createComment`, on `posts`, executed in the partition of
 * the commented post (partition key = postId).
 *
 * Creates the comment and increments the post's `commentCount` in ONE transaction: a stored
 * procedure's writes inside one logical partition commit together or not at all.
 *
 * Changed from the article's version:
 * - the comment is created first and the counter moved only once that succeeded, and a missing
 *   post is answered as an outcome rather than an exception, so callers can tell 404 from a
 *   failure;
 * - the comment must already belong to this post (`postId`), so the partition cannot be mixed up;
 * - every call checks that the operation was accepted (bounded execution), and the response
 *   body says what happened: {outcome: "created", item} or {outcome: "postNotFound"}.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function createComment(postId, comment) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();

    if (!comment || comment.type !== "comment" || comment.postId !== postId) {
        throw new Error("createComment: the comment must have type 'comment' and postId '" + postId + "'");
    }

    accepted(collection.readDocument(collection.getAltLink() + "/docs/" + postId, function (err, post) {
        if (err && err.number === 404) {
            response.setBody({ outcome: "postNotFound" });
            return;
        }
        if (err) throw err;
        if (post.type !== "post" || post.deleted) {
            response.setBody({ outcome: "postNotFound" });
            return;
        }

        accepted(collection.createDocument(collection.getSelfLink(), comment, function (err, created) {
            if (err) throw err;
            post.commentCount = (post.commentCount || 0) + 1;
            accepted(collection.replaceDocument(post._self, post, function (err) {
                if (err) throw err;
                response.setBody({ outcome: "created", item: created });
            }));
        }));
    }));

    function accepted(isAccepted) {
        if (!isAccepted) throw new Error("createComment: the database did not accept the operation; nothing was written");
    }
}
