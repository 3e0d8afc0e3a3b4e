/**
 * C5, stored procedure `deleteLike` on `posts` (as the community sample's `deleteLike`),
 * executed in the partition of the liked post (partition key = postId).
 *
 * Deletes a user's like and decrements the post's `likeCount` in ONE transaction, so the count
 * always equals the likes stored; and sets its `likesVersion` to the etag it had, so a kept view
 * of the post reads its likes again (src/app/kept/post_views.rs). The like's id is derived from the user (`like-<userId>`), so
 * it is read by id, no query.
 * The body answers {outcome: "deleted"}, {outcome: "postNotFound"} (no post, or a deleted one),
 * or {outcome: "likeNotFound"} (this user does not like the post: a second unlike moves nothing).
 * `request`, optional: the record of the caller's Idempotency-Key (see `firstTime`, keyed_helpers.js); a request
 * sent again with its key answers {outcome: "repeated", request: <the record>} and writes nothing.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function deleteLike(postId, userId, request) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();
    var procedure = "deleteLike";

    if (typeof postId !== "string" || typeof userId !== "string") {
        throw new Error("deleteLike: postId and userId must be strings");
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

            accepted(collection.readDocument(collection.getAltLink() + "/docs/like-" + userId, function (err, like) {
                if (err && err.number === 404) {
                    response.setBody({ outcome: "likeNotFound" });
                    return;
                }
                if (err) throw err;
                accepted(collection.deleteDocument(like._self, function (err) {
                    if (err) throw err;
                    post.likeCount = Math.max((post.likeCount || 0) - 1, 0);
                    post.likesVersion = post._etag;
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
