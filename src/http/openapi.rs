//! The OpenAPI description of the HTTP API, generated from the handlers' annotations and served
//! at `GET /api/openapi.json`. A test checks that it describes exactly the routes the router
//! serves.

use axum::Json;
use utoipa::OpenApi;

use super::{comments, feed, likes, posts, users};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Cosmos DB blog",
        description = "The blogging platform of Microsoft's article \"Model and partition data on Azure Cosmos DB using a \
                       real-world example\", on the article's final model (V3). Every response carries \
                       x-ms-request-charge (RU), x-cosmos-operations and x-cosmos-partitions; every error is application/problem+json."
    ),
    paths(
        users::create, users::edit, users::get, users::me, users::list_posts,
        posts::create, posts::edit, posts::get, posts::delete,
        comments::create, comments::list, comments::delete,
        likes::create, likes::list, likes::delete,
        feed::list,
    ),
    tags(
        (name = "users", description = "C1, Q1, Q3, and who the caller is"),
        (name = "posts", description = "C2, Q2, C7, C3, Q4, C6, C4, Q5, C5"),
        (name = "feed", description = "Q6"),
    )
)]
pub struct ApiDoc;

/// `GET /api/openapi.json`
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
