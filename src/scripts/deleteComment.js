/**
 * C6, stored procedure `deleteComment` on `posts`, executed in the partition of the commented
 * post (partition key = postId).
 *
 * Deletes a comment and decrements the post's `commentCount` in ONE transaction. Who may: the
 * comment's author, and the post's author (who moderates the comments under their post). The
 * check runs here, on the versions the transaction reads, so it cannot race a change.
 * The body answers {outcome: "deleted"}, {outcome: "postNotFound"} (no post, or a deleted one),
 * {outcome: "commentNotFound"}, or {outcome: "forbidden", author: <the comment's userId>}.
 * `request`, optional: the record of the caller's Idempotency-Key (see `firstTime`); a request
 * sent again with its key answers {outcome: "repeated", request: <the record>} and writes nothing.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function deleteComment(postId, commentId, callerId, request) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();

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
                    accepted(collection.replaceDocument(post._self, post, function (err) {
                        if (err) throw err;
                        remember({ outcome: "deleted" });
                    }));
                }));
            }));
        }));
    });

    // The record of an Idempotency-Key (src/app/idempotency.rs), when the caller sent one: read
    // first, so that a request sent again writes nothing and answers {outcome: "repeated",
    // request: <the record>}; created last, in this transaction, with the answer.
    function firstTime(proceed) {
        if (!request) {
            proceed();
            return;
        }
        if (request.type !== "request" || request.postId !== postId || typeof request.id !== "string") {
            throw new Error("deleteComment: the request record must have an id, type 'request' and postId '" + postId + "'");
        }
        accepted(collection.readDocument(collection.getAltLink() + "/docs/" + request.id, function (err, first) {
            if (err && err.number === 404) {
                proceed();
                return;
            }
            if (err) throw err;
            response.setBody({ outcome: "repeated", request: first });
        }));
    }

    function remember(answer) {
        if (!request) {
            response.setBody(answer);
            return;
        }
        accepted(collection.createDocument(collection.getSelfLink(), request, function (err) {
            // The same request, sent twice at once, committed first: this one writes nothing.
            if (err && err.number === 409) throw new Error("deleteComment: a request with this key is in progress");
            if (err) throw err;
            response.setBody(answer);
        }));
    }

    function accepted(isAccepted) {
        if (!isAccepted) throw new Error("deleteComment: the database did not accept the operation; nothing was written");
    }
}
