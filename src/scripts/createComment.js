/**
 * C3, the article's stored procedure `createComment`, on `posts`, executed in the partition of
 * the commented post (partition key = postId).
 *
 * Creates the comment and increments the post's `commentCount` in ONE transaction: a stored
 * procedure's writes inside one logical partition commit together or not at all. The same write
 * of the post sets its `commentsVersion` to the etag it had (etags never repeat), which tells a
 * kept view of the post that its comments changed (src/app/kept/post_views.rs).
 *
 * Changed from the article's version:
 * - the comment is created first and the counter moved only once that succeeded, and a missing
 *   post is answered as an outcome rather than an exception, so callers can tell 404 from a
 *   failure;
 * - the comment must already belong to this post (`postId`), so the partition cannot be mixed up;
 * - its id is new to the request, so an id found taken is the same request run again after its
 *   answer was lost: the comment is answered as created, and the counter not moved again;
 * - every call checks that the operation was accepted (bounded execution), and the response
 *   body says what happened: {outcome: "created", item} or {outcome: "postNotFound"};
 * - a draft (a `status` other than "published") takes no comment: its author is answered
 *   {outcome: "notPublished"}, anyone else {outcome: "postNotFound"}, as it is to them.
 * `request`, optional: the record of the caller's Idempotency-Key (see `firstTime`, keyed_helpers.js); a request
 * sent again with its key answers {outcome: "repeated", request: <the record>} and writes nothing.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function createComment(postId, comment, request) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();
    var procedure = "createComment";

    if (!comment || comment.type !== "comment" || comment.postId !== postId) {
        throw new Error("createComment: the comment must have type 'comment' and postId '" + postId + "'");
    }

    firstTime(function () {
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
            // A draft takes none: to anyone but its author, it does not exist.
            if (post.status !== undefined && post.status !== "published") {
                response.setBody({ outcome: comment.userId === post.userId ? "notPublished" : "postNotFound" });
                return;
            }

            accepted(collection.createDocument(collection.getSelfLink(), comment, function (err, created) {
                // Its id is new to this request: taken, it is this request's own comment, whose
                // transaction committed before its answer was lost and it was sent again.
                if (err && err.number === 409) {
                    accepted(collection.readDocument(collection.getAltLink() + "/docs/" + comment.id, function (err, first) {
                        if (err) throw err;
                        response.setBody({ outcome: "created", item: first });
                    }));
                    return;
                }
                if (err) throw err;
                post.commentCount = (post.commentCount || 0) + 1;
                post.commentsVersion = post._etag;
                accepted(collection.replaceDocument(post._self, post, function (err) {
                    if (err) throw err;
                    remember({ outcome: "created", item: created });
                }));
            }));
        }));
    });

    // The helpers every keyed procedure shares (keyed_helpers.js) take the place of the next line.
"keyed_helpers.js";
}
