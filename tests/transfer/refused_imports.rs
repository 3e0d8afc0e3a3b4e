//! An import of a file the blog would never have written is refused by line and field, and
//! nothing of it is imported.

use super::*;

/// Every item the API would never write is refused naming its line and field, with nothing
/// imported: the store the same, exported before and after.
#[tokio::test]
async fn what_the_api_would_never_write_imports_nothing() {
    let target = Target::new().await;
    let sample = Sample::new();
    let (whole, with) = (&sample.whole, |at, field, value| sample.with(at, field, value));
    let noise = common::noise_png_of(4, 4, 1);
    let picture = json!({"type": "picture", "postId": "p1", "userId": "ada",
        "name": format!("{}-4x4.png", "0".repeat(64)), "bytes": base64_of(&noise)});
    let revision = |number: u64, id: &str| {
        json!({"id": id, "type": "revision", "postId": "p1", "number": number, "title": "T0", "content": "C0",
            "writtenAt": "2026-01-01T00:00:00.000Z", "replacedAt": "2026-01-02T00:00:00.000Z"})
    };
    let with_revisions = |count: u64, revision: Value| {
        let mut items = sample.with(2, "revisionCount", json!(count));
        items.insert(5, revision);
        items
    };
    let cases: Vec<(Vec<Value>, &str)> = vec![
        (with_revisions(0, revision(0, "revision-0")), "line 7, `number`: revision 0 of a post whose edits kept 0"),
        (with_revisions(30, revision(3, "revision-3")), "line 7, `number`: revision 3 of a post whose edits kept 30: its revisions are numbered 10..30"),
        (with_revisions(1, revision(0, "revision-9")), "line 7, `id`: \"revision-9\" is not \"revision-0\""),
        (with(2, "revisionCount", json!(-1)), "line 4, `revisionCount`: a count of revisions is a whole number"),
        (with(2, "postId", json!("other")), "line 4, `postId`: \"other\" is not the post's `id`"),
        (with(3, "content", json!("x".repeat(3_000_000))), "line 5, `content`: `content` must be at most 2000 characters long"),
        (
            with(3, "content", json!("x".repeat(5_000))),
            "line 5, `content`: `content` must be at most 2000 characters long; it has 5000",
        ),
        (with(3, "id", json!("../../x")), "line 5, `id`: The id must not contain '/'"),
        (with(3, "id", json!("a/b?c#d%")), "line 5, `id`: The id must not contain '/'"),
        (with(3, "id", json!("p1")), "line 5, `id`: \"p1\" is in post \"p1\"'s partition already"),
        (with(1, "userId", json!("someone")), "line 3, `userId`: \"someone\" is not the user's `id`"),
        (with(2, "commentCount", json!(999)), "line 4, `commentCount`: post \"p1\" says 999, but the file lists 1"),
        (with(2, "likeCount", json!(0)), "line 4, `likeCount`: post \"p1\" says 0, but the file lists 1"),
        (with(3, "userId", json!("nobody")), "line 5, `userId`: \"nobody\" is no user of the file or of this store"),
        (with(4, "id", json!("like-ada")), "line 6, `id`: \"like-ada\" is not \"like-bob\""),
        (with(1, "username", json!("XANA")), "line 3, `username`: \"XANA\" is held in this store by user \"xana\""),
        (with(1, "username", json!("ADA")), "line 3, `username`: \"ADA\" is the same name as \"ada\", line 2's"),
        (with(1, "username", json!("\u{200B}")), "line 3, `username`: `username` must contain a visible character"),
        (with(2, "title", json!("")), "line 4: `title` must not be empty"),
        (with(2, "tags", json!(["Rust", "RUST"])), "line 4, `tags`: the tags \"Rust\" and \"RUST\" are the same tag"),
        (with(2, "deleted", json!(true)), "line 4, `deleted`: a deleted post"),
        (with(2, "status", json!("draft")), "line 5, `postId`: a comment of post \"p1\", a draft, which takes none"),
        (with(2, "status", json!("scheduled")), "line 4, `publishAt`: a scheduled post without its time"),
        (with(2, "publishAt", json!("2026-12-07T08:00:00.000Z")), "line 4, `publishAt`: a time on a post that is not scheduled"),
        (with(3, "creationDate", json!("yesterday")), "line 5, `creationDate`: \"yesterday\" is not an RFC 3339 date"),
        ([whole.clone(), vec![picture]].concat(), "line 7, `bytes`: their SHA-256 is not the one the picture's name says"),
        (
            [whole.clone(), vec![json!({"type": "picture", "postId": "p1", "userId": "bob", "name": "x", "bytes": ""})]].concat(),
            "line 7, `userId`: \"bob\" is not the post's author",
        ),
        (
            vec![a_user("ada", "ada"), a_user("bob", "bob"), sample.comment.clone(), sample.post.clone()],
            "line 4, `postId`: a comment of post \"p1\", which no line before it holds",
        ),
        (vec![a_user("ada", "ada"), json!({"id": "p", "type": "post"})], "line 3: not a \"post\" as the blog stores one"),
        (vec![a_user("ada", "ada"), json!({"type": "reservation"})], "line 3: `type` is \"reservation\""),
    ];
    for (items, said) in cases {
        target.refused(&target.import(&sealed(&items), &[]), said, &target.before);
    }
}

/// Lines that are not JSON, not a header, or no file at all are refused, naming the line.
#[tokio::test]
async fn a_file_that_is_not_json_or_has_no_header_is_refused_by_line() {
    let target = Target::new().await;
    let header = json!({"format": "cosmos-blog", "version": 2});
    let cases = [
        (
            format!("{header}\n{}\n{{\"id\": \"p\", \"type\": \"post\"\n", a_user("ada", "ada")),
            "line 3: not JSON",
        ),
        (format!("{}\n", a_user("ada", "ada")), "line 1: not the header"),
        (String::new(), "line 1: the file is empty"),
    ];
    for (text, said) in cases {
        let imported = target.import(&text, &[]);
        assert_eq!(imported.status.code(), Some(1), "{}", stderr(&imported));
        assert!(
            stderr(&imported).contains(said) && stderr(&imported).contains("nothing was imported"),
            "{said}: {}",
            stderr(&imported)
        );
    }
}

/// A post stored already, sent again with other counters, is another post: refused, as it
/// would leave the stored comment under a post that says it has none.
#[tokio::test]
async fn a_stored_post_sent_again_with_other_counters_is_refused() {
    let target = Target::new().await;
    let sample = Sample::new();
    let imported = target.import(&sealed(&sample.whole), &[]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    let before = handler(target.to.path(), &["export"]);
    let mut other_post = sample.post.clone();
    other_post["commentCount"] = json!(0);
    let imported = target.import(
        &sealed(&[a_user("ada", "ada"), a_user("bob", "bob"), other_post, sample.like.clone()]),
        &[],
    );
    let said = "line 4: post \"p1\" is in this store already, by \"ada\" with 1 comments and 1 likes; the file's is by \"ada\" with 0 and 1";
    assert!(
        stderr(&imported).contains(said) && stderr(&imported).contains("nothing was imported"),
        "{}",
        stderr(&imported)
    );
    assert_eq!(
        handler(target.to.path(), &["export"]).stdout,
        before.stdout,
        "nothing was imported"
    );
}
