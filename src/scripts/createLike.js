/**
 * C4, the article's stored procedure `createLike`, on `posts`, executed in the partition of the
 * liked post (partition key = postId).
 *
 * Creates the like and increments the post's `likeCount` in ONE transaction, and sets its
 * `likesVersion` to the etag it had: a kept view of the post then reads its likes again
 * (src/app/kept/post_views.rs).
 *
 * Changed from the article's version:
 * - a like's id is derived from the user (`like-<userId>`), so a second like by the same user
 *   fails to create with 409; the counter is moved only after the create succeeded, so a
 *   double like changes nothing and answers {outcome: "alreadyLiked"};
 * - a missing or deleted post (a tombstone of C7) answers {outcome: "postNotFound"} instead of
 *   throwing;
 * - a draft (a `status` other than "published") takes no like: its author is answered
 *   {outcome: "notPublished"}, anyone else {outcome: "postNotFound"}, as it is to them;
 * - the like must already belong to this post, and every call checks `isAccepted`.
 * `request`, optional: the record of the caller's Idempotency-Key (see `firstTime`, keyed_helpers.js); a request
 * sent again with its key answers {outcome: "repeated", request: <the record>} and writes nothing.
 * ES5 only: it also runs on Cosmos DB's own JavaScript engine.
 */
function createLike(postId, like, request) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();
    var procedure = "createLike";

    if (!like || like.type !== "like" || like.postId !== postId) {
        throw new Error("createLike: the like must have type 'like' and postId '" + postId + "'");
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
                response.setBody({ outcome: like.userId === post.userId ? "notPublished" : "postNotFound" });
                return;
            }

            accepted(collection.createDocument(collection.getSelfLink(), like, function (err, created) {
                if (err && err.number === 409) {
                    response.setBody({ outcome: "alreadyLiked" });
                    return;
                }
                if (err) throw err;
                post.likeCount = (post.likeCount || 0) + 1;
                post.likesVersion = post._etag;
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
