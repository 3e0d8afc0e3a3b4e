/**
 * C6, stored procedure `deleteComment` on `posts`, executed in the partition of the commented
 * post (partition key = postId).
 *
 * Deletes a comment and decrements the post's `commentCount` in ONE transaction, and sets its
 * `commentsVersion` to the etag it had: a kept view of the post then reads its comments again
 * (src/app/kept/post_views.rs). Who may: the comment's author, and the post's author (who moderates
 * the comments under their post). The check runs here, on the versions the transaction reads, so
 * it cannot race a change.
 * The body answers {outcome: "deleted"}, {outcome: "postNotFound"} (no post, or a deleted one),
 * {outcome: "commentNotFound"}, or {outcome: "forbidden", author: <the comment's userId>}.
 * `request`, optional: the record of the caller's Idempotency-Key (see `firstTime`, keyed_helpers.js); a request
 * sent again with its key answers {outcome: "repeated", request: <the record>} and writes nothing.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function deleteComment(postId, commentId, callerId, request) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();
    var procedure = "deleteComment";

    if (typeof postId !== "string" || typeof commentId !== "string" || typeof callerId !== "string") {
        throw new Error("deleteComment: postId, commentId and callerId must be strings");
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

            accepted(collection.readDocument(collection.getAltLink() + "/docs/" + commentId, function (err, comment) {
                if (err && err.number === 404) {
                    response.setBody({ outcome: "commentNotFound" });
                    return;
                }
                if (err) throw err;
                if (comment.type !== "comment") {
                    response.setBody({ outcome: "commentNotFound" });
                    return;
                }
                if (callerId !== comment.userId && callerId !== post.userId) {
                    response.setBody({ outcome: "forbidden", author: comment.userId });
                    return;
                }
                accepted(collection.deleteDocument(comment._self, function (err) {
                    if (err) throw err;
                    post.commentCount = Math.max((post.commentCount || 0) - 1, 0);
                    post.commentsVersion = post._etag;
                    accepted(collection.replaceDocument(post._self, post, function (err) {
                        if (err) throw err;
                        remember({ outcome: "deleted" });
                    }));
                }));
            }));
        }));
    });

    // The helpers every keyed procedure shares (keyed_helpers.js) take the place of the next line.
"keyed_helpers.js";
}
