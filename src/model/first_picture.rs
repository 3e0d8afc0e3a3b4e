//! A post's first picture: the one its page shows first as an image, which its short copies
//! carry so that the lists show it beside the excerpt and a link preview shows it. Derived from
//! the Markdown (`markdown::first_picture`) and the pictures' names (`picture`), which it joins.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::markdown::{self, Pictures};
use super::picture::PictureAddress;
use super::{Post, truncate_chars};

/// The longest alt text a [`FirstPicture`] keeps, in characters: what X takes as an image's
/// description in a link preview (`twitter:image:alt`, 420). The alt text is the writer's, as
/// long as the post, and the first picture rides on every short copy: cut, those stay short.
pub(crate) const MAX_PREVIEW_ALT_CHARS: usize = 420;

/// A post's first picture (the first its page shows as an image), as the lists show it beside
/// the post's excerpt and a link preview shows it. That is its phones' copy, where it has one,
/// else the picture itself (it is no wider, or an animation). The phones' copy is 960 pixels
/// wide. That is small enough for the platforms that fetch previews, which refuse files over 5
/// or 8 MB where an original may be 10 MiB. It is wide enough for a large preview card, which
/// asks for 600. The blog keeps no other size. Derived from the post's Markdown whenever its
/// short copies are made, and kept on them, so that a list shows it from the copy it reads
/// already.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub(crate) struct FirstPicture {
    /// Its path on the blog (`/pictures/{userId}/{postId}/{name}`).
    pub(crate) url: String,
    /// Its width in pixels.
    pub(crate) width: u32,
    /// Its height in pixels.
    pub(crate) height: u32,
    /// What it shows, as its writer described it in the post (at most 420 characters).
    pub(crate) alt: String,
}

impl FirstPicture {
    /// The first picture `post`'s page shows, if it shows one.
    pub(crate) fn of(post: &Post) -> Option<FirstPicture> {
        let (address, alt) = markdown::first_picture(
            &post.content,
            Pictures::Of { owner: &post.user_id, post: &post.id },
        )?;
        let shown = address.phone().unwrap_or(address);
        let (width, height) = shown.name.size();
        Some(FirstPicture {
            url: shown.url(),
            width,
            height,
            alt: truncate_chars(&alt, MAX_PREVIEW_ALT_CHARS).to_owned(),
        })
    }

    /// Whether it is a picture of `post`'s own, at the size it says. That is what a page shows
    /// as an image, as the post's page shows only its own pictures (the copy is the blog's own
    /// writing, and this costs no read).
    pub(crate) fn is_of(&self, post: &Post) -> bool {
        PictureAddress::of_url(&self.url).is_some_and(|address| {
            address.owner == post.user_id
                && address.post == post.id
                && address.name.within_limits()
                && address.name.size() == (self.width, self.height)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash() -> String {
        "0123456789abcdef".repeat(4)
    }

    fn post(content: &str) -> Post {
        let author = crate::model::new_user("u1".into(), "ada".into());
        crate::model::new_post("p1".into(), &author, "t".into(), content.into(), "d".into())
    }

    #[test]
    fn a_posts_first_picture_is_its_phones_copy_where_it_has_one() {
        let hash = hash();
        let wide = post(&format!(
            "Text.\n\n![A red kite](/pictures/u1/p1/{hash}-4000x3000.png) ![b](/pictures/u1/p1/{hash}-20x10.gif)"
        ));
        let first = FirstPicture::of(&wide).unwrap();
        let expected = FirstPicture {
            url: format!("/pictures/u1/p1/{hash}-960x720.jpg"),
            width: 960,
            height: 720,
            alt: "A red kite".into(),
        };
        assert_eq!(first, expected);
        assert!(first.is_of(&wide));
        let small =
            FirstPicture::of(&post(&format!("![](/pictures/u1/p1/{hash}-640x480.gif)"))).unwrap();
        assert_eq!(
            (small.url.as_str(), small.width, small.height, small.alt.as_str()),
            (&*format!("/pictures/u1/p1/{hash}-640x480.gif"), 640, 480, "")
        );
        assert_eq!(FirstPicture::of(&post("No picture.")), None);
        let long = FirstPicture::of(&post(&format!(
            "![{}](/pictures/u1/p1/{hash}-10x10.png)",
            "é".repeat(500)
        )))
        .unwrap();
        assert_eq!(long.alt.chars().count(), MAX_PREVIEW_ALT_CHARS);
        // A copy shows only a picture of its own post, at the size its name says.
        assert!(!FirstPicture { width: 961, ..expected.clone() }.is_of(&wide));
        assert!(
            !FirstPicture {
                url: format!("/pictures/u2/p1/{hash}-960x720.jpg"),
                ..expected.clone()
            }
            .is_of(&wide)
        );
        assert!(
            !FirstPicture { url: "https://elsewhere.example/x.jpg".into(), ..expected }
                .is_of(&wide)
        );
        let stored = serde_json::to_value(&first).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({"url": first.url, "width": 960, "height": 720, "alt": "A red kite"})
        );
    }
}
