//! The OpenAPI description of the HTTP API, generated from the handlers' annotations and served
//! at `GET /api/openapi.json`. A test checks that it describes exactly the routes the router
//! serves.

use axum::Json;
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::{RefOr, Required};
use utoipa::{Modify, OpenApi};

use super::{comments, feed, likes, pictures, posts, tags, users};

pub(crate) use super::extract::item_id;

/// Every path parameter of the API but a tag is an item's id (`{userId}`, `{postId}`,
/// `{commentId}`): each gets [`item_id`]'s schema here, once, rather than the pattern in every
/// annotation; a `{tag}` gets a tag's.
struct PathIdsAreItemIds;

impl Modify for PathIdsAreItemIds {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
            for operation in operations.into_iter().flatten() {
                for parameter in operation.parameters.iter_mut().flatten() {
                    if parameter.parameter_in == ParameterIn::Path && parameter.name == "tag" {
                        parameter.schema = Some(RefOr::T(super::posts::tag_schema().into()));
                        parameter.required = Required::True;
                    } else if parameter.parameter_in == ParameterIn::Path {
                        assert!(parameter.name.ends_with("Id"), "path parameter {:?} is not an id", parameter.name);
                        parameter.schema = Some(RefOr::T(item_id()));
                        parameter.required = Required::True;
                    }
                }
            }
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
        posts::create, posts::edit, posts::get, posts::delete,
        comments::create, comments::list, comments::delete,
        likes::create, likes::list, likes::delete,
        pictures::upload,
        feed::list,
        tags::list_posts,
    ),
    modifiers(&PathIdsAreItemIds),
    tags(
        (name = "users", description = "C1, Q1, Q3, and who the caller is"),
        (name = "posts", description = "C2, Q2, C7, C3, Q4, C6, C4, Q5, C5"),
        (name = "feed", description = "Q6"),
        (name = "tags", description = "Q7"),
    )
)]
pub(crate) struct ApiDoc;

/// `GET /api/openapi.json`
pub(crate) async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
