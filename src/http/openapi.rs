//! The OpenAPI description of the HTTP API, generated from the handlers' annotations and served
//! at `GET /api/openapi.json`. A test checks that it describes exactly the routes the router
//! serves; tests/openapi_client/run.sh generates a client from it and calls every operation.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::{RefOr, Required};
use utoipa::{Modify, OpenApi};

use super::{comments, feed, likes, pictures, posts, revisions, search, tags, users};

pub(crate) use super::extract::item_id;

/// Every path parameter of the API but a tag and a revision's number is an item's id (`{userId}`,
/// `{postId}`, `{commentId}`). Each gets [`item_id`]'s schema here, once, rather than the
/// pattern in every annotation; a `{tag}` gets a tag's, a `{number}` a whole number's.
struct PathIdsAreItemIds;

impl Modify for PathIdsAreItemIds {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations =
                [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
            for operation in operations.into_iter().flatten() {
                for parameter in operation.parameters.iter_mut().flatten() {
                    if parameter.parameter_in == ParameterIn::Path && parameter.name == "tag" {
                        parameter.schema = Some(RefOr::T(super::posts::tag_schema().into()));
                        parameter.required = Required::True;
                    } else if parameter.parameter_in == ParameterIn::Path
                        && parameter.name == "number"
                    {
                        use utoipa::openapi::schema::{ObjectBuilder, Type};
                        let number = ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(0))
                            .build();
                        parameter.schema = Some(RefOr::T(number.into()));
                        parameter.required = Required::True;
                    } else if parameter.parameter_in == ParameterIn::Path {
                        assert!(
                            parameter.name.ends_with("Id"),
                            "path parameter {:?} is not an id",
                            parameter.name
                        );
                        parameter.schema = Some(RefOr::T(item_id()));
                        parameter.required = Required::True;
                    }
                }
            }
        }
    }
}

/// A request body sent as `application/octet-stream` (a picture's upload) is bytes: a string of
/// format `binary` (OpenAPI 3.1, "Considerations for File Uploads"), what generated clients
/// send as a file. Version 5 of utoipa describes the annotation's `Vec<u8>` as an array of
/// integers, which a client generated from it would send as JSON.
struct OctetStreamBodiesAreBytes;

impl Modify for OctetStreamBodiesAreBytes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.put, &mut item.post, &mut item.patch];
            for body in operations
                .into_iter()
                .flatten()
                .filter_map(|operation| operation.request_body.as_mut())
            {
                if let Some(content) = body.content.get_mut("application/octet-stream") {
                    let bytes = ObjectBuilder::new()
                        .schema_type(Type::String)
                        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
                        .content_media_type("application/octet-stream");
                    content.schema = Some(RefOr::T(bytes.into()));
                }
            }
        }
    }
}

/// The kind of item an answer holds, for the links that lead from its ids.
#[derive(Clone, Copy)]
enum Item {
    /// A user, its id in the field named.
    User(&'static str),
    Post,
    Comment,
    Like,
    Revision,
}

/// Which answers hold an item, and where in their body (a JSON pointer: "" for the body itself,
/// "/items/0" for a list's first): (operationId, status, where, what).
const ANSWERS: &[(&str, &str, &str, Item)] = &[
    ("createUser", "201", "", Item::User("id")),
    ("editUser", "200", "", Item::User("id")),
    ("getUser", "200", "", Item::User("id")),
    ("getMe", "200", "", Item::User("userId")),
    ("createPost", "201", "", Item::Post),
    ("editPost", "200", "", Item::Post),
    ("getPost", "200", "", Item::Post),
    ("listUserPosts", "200", "/items/0", Item::Post),
    ("listUserDrafts", "200", "/items/0", Item::Post),
    ("listFeed", "200", "/items/0", Item::Post),
    ("listTagPosts", "200", "/items/0", Item::Post),
    ("createComment", "201", "", Item::Comment),
    ("listComments", "200", "/items/0", Item::Comment),
    ("createLike", "201", "", Item::Like),
    ("listLikes", "200", "/items/0", Item::Like),
    ("listRevisions", "200", "/items/0", Item::Revision),
    ("searchPosts", "200", "/items/0/post", Item::Post),
];

/// One link from an item: the operation it leads to, and which of the item's fields fill which
/// of that operation's path parameters and request body's fields.
struct Lead {
    name: &'static str,
    operation_id: &'static str,
    parameters: Vec<(&'static str, &'static str)>,
    body: Vec<(&'static str, &'static str)>,
}

fn lead(
    name: &'static str,
    operation_id: &'static str,
    parameters: &[(&'static str, &'static str)],
    body: &[(&'static str, &'static str)],
) -> Lead {
    Lead { name, operation_id, parameters: parameters.to_vec(), body: body.to_vec() }
}

/// Where each kind of item leads. A post's author may comment on it and like it, so a post's
/// `userId` fills a new comment's or like's, as a user's id fills a new post's. A like's
/// `userId` is its liker's, the one who may take it back.
fn leads_from(item: Item) -> Vec<Lead> {
    match item {
        Item::User(id) => vec![
            lead("getUser", "getUser", &[("userId", id)], &[]),
            lead("editUser", "editUser", &[("userId", id)], &[]),
            lead("listUserPosts", "listUserPosts", &[("userId", id)], &[]),
            lead("listUserDrafts", "listUserDrafts", &[("userId", id)], &[]),
            lead("createPost", "createPost", &[], &[("userId", id)]),
        ],
        Item::Post => vec![
            lead("getPost", "getPost", &[("postId", "id")], &[]),
            lead("editPost", "editPost", &[("postId", "id")], &[]),
            lead("deletePost", "deletePost", &[("postId", "id")], &[]),
            lead("sharePreview", "sharePreview", &[("postId", "id")], &[]),
            lead("revokePreview", "revokePreview", &[("postId", "id")], &[]),
            lead("listRevisions", "listRevisions", &[("postId", "id")], &[]),
            lead("listComments", "listComments", &[("postId", "id")], &[]),
            lead("createComment", "createComment", &[("postId", "id")], &[("userId", "userId")]),
            lead("listLikes", "listLikes", &[("postId", "id")], &[]),
            lead("createLike", "createLike", &[("postId", "id")], &[("userId", "userId")]),
            lead("uploadPicture", "uploadPicture", &[("postId", "id")], &[]),
            lead("getAuthor", "getUser", &[("userId", "userId")], &[]),
            lead("listAuthorPosts", "listUserPosts", &[("userId", "userId")], &[]),
        ],
        Item::Comment => vec![
            lead("getPost", "getPost", &[("postId", "postId")], &[]),
            lead("listComments", "listComments", &[("postId", "postId")], &[]),
            lead(
                "deleteComment",
                "deleteComment",
                &[("postId", "postId"), ("commentId", "id")],
                &[],
            ),
            lead("getCommenter", "getUser", &[("userId", "userId")], &[]),
        ],
        Item::Like => vec![
            lead("getPost", "getPost", &[("postId", "postId")], &[]),
            lead("listLikes", "listLikes", &[("postId", "postId")], &[]),
            lead("deleteLike", "deleteLike", &[("postId", "postId"), ("userId", "userId")], &[]),
            lead("getLiker", "getUser", &[("userId", "userId")], &[]),
        ],
        Item::Revision => vec![
            lead("getPost", "getPost", &[("postId", "postId")], &[]),
            lead("getRevision", "getRevision", &[("postId", "postId"), ("number", "number")], &[]),
            lead(
                "restoreRevision",
                "restoreRevision",
                &[("postId", "postId"), ("number", "number")],
                &[],
            ),
        ],
    }
}

/// Puts the links of [`ANSWERS`] on their responses (OpenAPI 3.1, "Link Object"): each value a
/// runtime expression into the answer's body, `$response.body#/id`. A request body's link holds
/// only the fields it fills: the caller supplies the rest (Schemathesis merges it into the body
/// it generates: `schemathesis/specs/openapi/stateful/links.py`, `merge_body`).
///
/// The links are written as JSON, not as utoipa's `Link`: utoipa 5.5's `Link` lacks serde's
/// `rename_all = "camelCase"` (utoipa/src/openapi/link.rs) and writes `operation_id` and
/// `request_body`, which no reader of OpenAPI takes. The response's flattened extensions map
/// holds the one key `links`, written where the field would be.
struct IdsLeadToOperations;

impl Modify for IdsLeadToOperations {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let mut operations: BTreeMap<String, &mut Operation> = BTreeMap::new();
        for item in openapi.paths.paths.values_mut() {
            let all =
                [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
            // An operation without an id, or with another's, is for tests/openapi.rs to name.
            for operation in all.into_iter().flatten() {
                if let Some(id) = operation.operation_id.clone() {
                    operations.insert(id, operation);
                }
            }
        }
        for &(answer, status, at, item) in ANSWERS {
            let operation = operations
                .get_mut(answer)
                .unwrap_or_else(|| panic!("ANSWERS names {answer}, no operation"));
            let Some(RefOr::T(response)) = operation.responses.responses.get_mut(status) else {
                panic!("{answer} has no {status} response of its own");
            };
            let from = |fields: Vec<(&str, &str)>| -> Map<String, Value> {
                fields
                    .into_iter()
                    .map(|(name, field)| {
                        (name.to_owned(), format!("$response.body#{at}/{field}").into())
                    })
                    .collect()
            };
            let mut links = Map::new();
            for Lead { name, operation_id, parameters, body } in leads_from(item) {
                let mut link =
                    Map::from_iter([("operationId".to_owned(), Value::from(operation_id))]);
                if !parameters.is_empty() {
                    link.insert("parameters".to_owned(), from(parameters).into());
                }
                if !body.is_empty() {
                    link.insert("requestBody".to_owned(), from(body).into());
                }
                links.insert(name.to_owned(), link.into());
            }
            response
                .extensions
                .get_or_insert_with(Default::default)
                .insert("links".to_owned(), links.into());
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Cosmos DB blog",
        description = "The blogging platform of Microsoft's article \"Model and partition data on Azure Cosmos DB using a \
                       real-world example\", on the article's final model (V3). Every response carries \
                       x-ms-request-charge (RU), x-cosmos-operations, x-cosmos-queries and x-cosmos-partitions; every error is application/problem+json."
    ),
    paths(
        users::create, users::edit, users::get, users::me, users::list_posts,
        users::list_drafts,
        posts::create, posts::edit, posts::get, posts::delete,
        posts::share_preview, posts::revoke_preview,
        revisions::list, revisions::get, revisions::restore_one,
        comments::create, comments::list, comments::delete,
        likes::create, likes::list, likes::delete,
        pictures::upload,
        feed::list,
        tags::list_posts,
        search::search,
    ),
    modifiers(&PathIdsAreItemIds, &OctetStreamBodiesAreBytes, &IdsLeadToOperations),
    tags(
        (name = "users", description = "C1, Q1, Q3, and who the caller is"),
        (name = "posts", description = "C2, Q2, C7, C3, Q4, C6, C4, Q5, C5"),
        (name = "feed", description = "Q6"),
        (name = "tags", description = "Q7"),
        (name = "search", description = "Q8"),
    )
)]
pub(crate) struct ApiDoc;

/// `GET /api/openapi.json`: the same bytes for every request to this build, made once, with an
/// ETag. Shared caches keep it as they keep the API's reads; an answer that said nothing of how
/// long it may be kept would be `no-store`.
pub(crate) async fn document(headers: axum::http::HeaderMap) -> axum::response::Response {
    static DOCUMENT: std::sync::LazyLock<axum::body::Bytes> = std::sync::LazyLock::new(|| {
        serde_json::to_vec(&ApiDoc::openapi()).expect("the description serializes").into()
    });
    super::caching::revalidated(&headers, "application/json", DOCUMENT.clone())
}
