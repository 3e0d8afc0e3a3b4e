//! Pictures' names and addresses: which picture a name is (its content's hash, its size and
//! format), where it lives (its writer and post), and the page address it is served at. Pure,
//! so that the Markdown renderer knows a picture's size and its phones' variant from its
//! address alone, and the stores and the pages agree on every name.

use super::validate_id;

/// The formats a picture may have, as uploaded and as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// JPEG.
    Jpeg,
    /// PNG.
    Png,
    /// WebP (stored as JPEG, or PNG where it has transparency: the pure-Rust encoder writes
    /// lossless WebP only, larger than either).
    WebP,
    /// GIF, animated or not.
    Gif,
}

impl Kind {
    /// The media type a picture of this kind is served with.
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Kind::Jpeg => "image/jpeg",
            Kind::Png => "image/png",
            Kind::WebP => "image/webp",
            Kind::Gif => "image/gif",
        }
    }

    /// The file extension of this kind.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Kind::Jpeg => "jpg",
            Kind::Png => "png",
            Kind::WebP => "webp",
            Kind::Gif => "gif",
        }
    }

    /// The kind whose extension is `extension`.
    pub(crate) fn of_extension(extension: &str) -> Option<Kind> {
        [Kind::Jpeg, Kind::Png, Kind::WebP, Kind::Gif]
            .into_iter()
            .find(|kind| kind.extension() == extension)
    }
}

/// The width of the smaller JPEG a wider still picture also gets, for phones (`srcset`).
pub(crate) const PHONE_WIDTH: u32 = 960;

/// The width of the screens' copy a still picture wider than it also gets. A post page's 44rem
/// column on a screen of two device pixels per CSS pixel is 1,408 of them, and on a phone of
/// three at 390 CSS pixels 1,170. That is more than the phones' copy and far less than a photo
/// as taken.
pub(crate) const SCREEN_WIDTH: u32 = 1_440;

/// The sizes of a picture's small copies, for the lists' thumbnails at one and two device
/// pixels per CSS pixel (`srcset` 1x, 2x). The lists' box (`.posts .thumb` in `style.css`) is 8
/// × 6 rem, 128 × 96 CSS pixels at a browser's default 16 px (6 × 4.5 rem on a phone, the same
/// 4:3). The picture is cropped to fill it. So a copy is that box exactly, cropped as the
/// stylesheet's `object-fit: cover` crops (about its middle). The box on a phone of three
/// device pixels per CSS pixel (288 × 216) takes the 2× copy, barely scaled.
pub(crate) const SMALL_SIZES: [(u32, u32); 2] = [(128, 96), (256, 192)];

/// The longest side of a picture the blog takes, in pixels ([`Limits`](crate::pictures::Limits)'s
/// default): no stored picture is larger, so no name of a stored picture says more.
pub(crate) const MAX_SIDE: u32 = 8_000;

/// The most pixels of a picture the blog takes, width × height ([`Limits`](crate::pictures::Limits)'s
/// default).
pub(crate) const MAX_PIXELS: u64 = 40_000_000;

/// The size of the phones' variant of a `width` × `height` picture: [`PHONE_WIDTH`] wide, as
/// high as keeps its proportions. One rule, so that the page knows the variant's name from the
/// picture's without asking the store.
pub(crate) fn phone_size(width: u32, height: u32) -> (u32, u32) {
    scaled_to(PHONE_WIDTH, width, height)
}

/// The size of the screens' copy of a `width` × `height` picture: [`SCREEN_WIDTH`] wide, as
/// high as keeps its proportions (the rule of [`phone_size`]).
pub(crate) fn screen_size(width: u32, height: u32) -> (u32, u32) {
    scaled_to(SCREEN_WIDTH, width, height)
}

/// `to` wide, and as high as keeps the proportions of `width` × `height`, to the nearest pixel.
fn scaled_to(to: u32, width: u32, height: u32) -> (u32, u32) {
    let scaled = (u64::from(height) * u64::from(to) + u64::from(width) / 2) / u64::from(width);
    (to, u32::try_from(scaled).unwrap_or(u32::MAX).max(1))
}

/// A picture's name as stored and served: the SHA-256 of its bytes in hex, its size, and its
/// extension (`<hash>-<width>x<height>.jpg`). The size is in the name so that a page can give
/// `width` and `height` (nothing jumps as it loads) and the phones' variant's address, reading
/// nothing. The hash is in it so that a name never holds other bytes and may be cached for
/// good. Checked, so that a name is never a path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PictureName {
    text: String,
    width: u32,
    height: u32,
    kind: Kind,
}

impl PictureName {
    /// The name of a picture whose bytes hash to `hash` (hex).
    pub(crate) fn new(hash: &str, width: u32, height: u32, kind: Kind) -> PictureName {
        PictureName {
            text: format!("{hash}-{width}x{height}.{}", kind.extension()),
            width,
            height,
            kind,
        }
    }

    /// The name, if `text` is one.
    pub fn parse(text: &str) -> Option<PictureName> {
        let (stem, extension) = text.split_once('.')?;
        let (hash, size) = stem.split_once('-')?;
        let (width, height) = size.split_once('x')?;
        let is_hash =
            hash.len() == 64 && hash.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
        // (WebP is stored as JPEG or PNG: no stored picture is named `.webp`.)
        let kind = Kind::of_extension(extension).filter(|kind| *kind != Kind::WebP)?;
        let (width, height) = (dimension(width)?, dimension(height)?);
        is_hash.then(|| PictureName::new(hash, width, height, kind))
    }

    /// The kind of the picture, from its extension.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// Its width and height in pixels.
    pub(crate) fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Whether its size is one the blog takes ([`MAX_SIDE`], [`MAX_PIXELS`], every side at
    /// least 1). Anything else is a name made up by hand, never a picture uploaded. A page that
    /// believed it would lay out an `<img>` billions of pixels high.
    pub(crate) fn within_limits(&self) -> bool {
        let (width, height) = self.size();
        width >= 1
            && height >= 1
            && width.max(height) <= MAX_SIDE
            && u64::from(width) * u64::from(height) <= MAX_PIXELS
    }

    /// The SHA-256 of its bytes, in hex: its strong `ETag`.
    pub fn hash(&self) -> &str {
        &self.text[..64]
    }

    /// The name of the phones' variant of this picture, where it has one: a still picture wider
    /// than [`PHONE_WIDTH`] (an animation keeps its frames, and a GIF shown smaller is a GIF).
    pub(crate) fn phone(&self) -> Option<PictureName> {
        (self.width > PHONE_WIDTH && self.kind != Kind::Gif).then(|| {
            let (width, height) = phone_size(self.width, self.height);
            PictureName::new(self.hash(), width, height, Kind::Jpeg)
        })
    }

    /// The name of the screens' copy of this picture, where it has one: a still picture wider
    /// than [`SCREEN_WIDTH`], as [`PictureName::phone`] says for phones.
    pub(crate) fn screen(&self) -> Option<PictureName> {
        (self.width > SCREEN_WIDTH && self.kind != Kind::Gif).then(|| {
            let (width, height) = screen_size(self.width, self.height);
            PictureName::new(self.hash(), width, height, Kind::Jpeg)
        })
    }

    /// Whether this name is of the size of a copy scaled to a width ([`PictureName::phone`],
    /// [`PictureName::screen`]): a JPEG [`PHONE_WIDTH`] or [`SCREEN_WIDTH`] wide.
    pub(crate) fn is_scaled_copy_size(&self) -> bool {
        self.kind == Kind::Jpeg && (self.width == PHONE_WIDTH || self.width == SCREEN_WIDTH)
    }

    /// The name of this picture's small copy of `size` (one of [`SMALL_SIZES`]), where it has
    /// one: a still picture that covers the size and is not of it already. It is made from what
    /// the lists showed before small copies (its phones' variant, or itself where it has none).
    /// So the picture's name and its phones' variant's give the same name: a list knows it from
    /// the short copy's picture, reading nothing. A JPEG, or a PNG where that is a PNG (no
    /// wider than [`PHONE_WIDTH`]: a diagram or a logo, whose transparency stays); an animation
    /// has none.
    pub(crate) fn small(&self, size: (u32, u32)) -> Option<PictureName> {
        let source = self.phone().unwrap_or_else(|| self.clone());
        let (width, height) = source.size();
        let still = source.kind != Kind::Gif;
        let kind = if source.kind == Kind::Png { Kind::Png } else { Kind::Jpeg };
        (still && width >= size.0 && height >= size.1 && (width, height) != size)
            .then(|| PictureName::new(self.hash(), size.0, size.1, kind))
    }

    /// Whether this name is of a copy's size: a phones', a screens' or a small copy's.
    pub(crate) fn is_copy_size(&self) -> bool {
        self.is_scaled_copy_size() || self.is_small_size()
    }

    /// Whether this name is one of a small copy's ([`PictureName::small`]): of a
    /// [`SMALL_SIZES`] size, a JPEG or a PNG.
    pub(crate) fn is_small_size(&self) -> bool {
        SMALL_SIZES.contains(&self.size()) && matches!(self.kind, Kind::Jpeg | Kind::Png)
    }

    /// The names of the copies made of this picture: its phones' variant, its screens' copy and
    /// its small copies, where it has them.
    pub(crate) fn copies(&self) -> Vec<PictureName> {
        self.phone()
            .into_iter()
            .chain(self.screen())
            .chain(SMALL_SIZES.iter().filter_map(|size| self.small(*size)))
            .collect()
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for PictureName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A side in a name: a whole number from 1, written without leading zeros (one name per size).
fn dimension(text: &str) -> Option<u32> {
    let value: u32 = text.parse().ok()?;
    (value > 0 && value.to_string() == text).then_some(value)
}

/// Where a picture lives: under its owner (the writer, whose quota it counts against) and the
/// post it was added to (deleted with it), by its name. Served at `/pictures/{owner}/{post}/{name}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PictureAddress {
    /// The writer's user id.
    pub owner: String,
    /// The post's id.
    pub post: String,
    /// The picture's name.
    pub name: PictureName,
}

impl PictureAddress {
    /// The address, if the ids are ids and the name a name.
    pub(crate) fn parse(owner: &str, post: &str, name: &str) -> Option<PictureAddress> {
        validate_id(owner).ok()?;
        validate_id(post).ok()?;
        Some(PictureAddress {
            owner: owner.to_owned(),
            post: post.to_owned(),
            name: PictureName::parse(name)?,
        })
    }

    /// The address of the phones' variant, where there is one.
    pub(crate) fn phone(&self) -> Option<PictureAddress> {
        self.name.phone().map(|name| PictureAddress { name, ..self.clone() })
    }

    /// The address of the screens' copy, where there is one.
    pub(crate) fn screen(&self) -> Option<PictureAddress> {
        self.name.screen().map(|name| PictureAddress { name, ..self.clone() })
    }

    /// The picture's key in its store: `owner/post/name`, each part one level.
    pub(crate) fn key(&self) -> String {
        format!("{}/{}/{}", self.owner, self.post, self.name)
    }

    /// The address of its small copy of `size`, where there is one ([`PictureName::small`]).
    pub(crate) fn small(&self, size: (u32, u32)) -> Option<PictureAddress> {
        self.name.small(size).map(|name| PictureAddress { name, ..self.clone() })
    }

    /// Its path on the blog: `/pictures/owner/post/name`, each id escaped as a path segment.
    pub(crate) fn url(&self) -> String {
        format!(
            "{PICTURES_PATH}{}/{}/{}",
            escape_segment(&self.owner),
            escape_segment(&self.post),
            self.name
        )
    }

    /// The picture whose path on the blog is `url` ([`PictureAddress::url`]), if it is one.
    pub(crate) fn of_url(url: &str) -> Option<PictureAddress> {
        let mut segments = url.strip_prefix(PICTURES_PATH)?.split('/');
        let (owner, post, name) = (segments.next()?, segments.next()?, segments.next()?);
        if segments.next().is_some() {
            return None;
        }
        PictureAddress::parse(&unescape_segment(owner)?, &unescape_segment(post)?, name)
    }
}

/// Where the blog serves pictures.
pub(crate) const PICTURES_PATH: &str = "/pictures/";

/// An id as one path segment of a URL, and of a Markdown link's destination. Letters, digits
/// and `-._~` stay as they are (every UUID), anything else becomes `%XX`. So no id can end the
/// segment, the link or the attribute it is written in.
fn escape_segment(id: &str) -> String {
    let mut escaped = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("%{byte:02X}"));
        }
    }
    escaped
}

/// A path segment with its `%XX` escapes undone (as a router does), if it is well-formed.
fn unescape_segment(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut text = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            text.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            text.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash() -> String {
        "0123456789abcdef".repeat(4)
    }

    #[test]
    fn a_name_is_a_content_address_never_a_path() {
        let hash = hash();
        for good in [
            format!("{hash}-1x1.jpg"),
            format!("{hash}-4000x3000.png"),
            format!("{hash}-20x10.gif"),
        ] {
            assert_eq!(PictureName::parse(&good).map(|name| name.to_string()), Some(good));
        }
        for bad in [
            format!("{hash}-1x1.webp"),
            format!("{hash}-1x1.jpg.jpg"),
            format!("{hash}-01x1.jpg"),
            format!("{hash}-0x1.jpg"),
            format!("{hash}-1x.jpg"),
            format!("{hash}.jpg"),
            format!("{}-1x1.jpg", hash.to_uppercase()),
            format!("{}-1x1.jpg", &hash[1..]),
            "../../etc/passwd".to_owned(),
            format!("../{hash}-1x1.jpg"),
            format!(".partial-{hash}-1x1.jpg"),
            String::new(),
        ] {
            assert!(PictureName::parse(&bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_name_is_within_the_limits_only_at_a_size_the_blog_takes() {
        let within = |size: &str| {
            PictureName::parse(&format!("{}-{size}.png", hash())).unwrap().within_limits()
        };
        for taken in ["1x1", "8000x5000", "5000x8000", "6324x6324"] {
            assert!(within(taken), "{taken}");
        }
        for refused in ["8001x1", "1x8001", "8000x4294967295", "4294967295x4294967295", "6325x6325"]
        {
            assert!(!within(refused), "{refused}");
        }
        assert!(!PictureName::new(&hash(), 0, 10, Kind::Png).within_limits(), "a side of 0");
    }

    #[test]
    fn a_wide_still_picture_has_a_phones_variant_named_from_its_own_name() {
        let name = PictureName::parse(&format!("{}-4000x3000.png", hash())).unwrap();
        assert_eq!(name.phone().unwrap().to_string(), format!("{}-960x720.jpg", hash()));
        assert_eq!(phone_size(961, 1), (960, 1));
        assert_eq!(phone_size(1920, 1081), (960, 541), "rounded to the nearest pixel");
        for none in ["960x2000.jpg", "4000x3000.gif"] {
            assert!(
                PictureName::parse(&format!("{}-{none}", hash())).unwrap().phone().is_none(),
                "{none}"
            );
        }
    }

    #[test]
    fn a_still_picture_wider_than_a_screens_copy_has_one_named_from_its_own_name() {
        let name = |text: &str| PictureName::parse(&format!("{}-{text}", hash())).unwrap();
        let photo = name("4032x3024.png");
        assert_eq!(photo.screen().unwrap().to_string(), format!("{}-1440x1080.jpg", hash()));
        assert!(photo.copies().contains(&photo.screen().unwrap()));
        assert_eq!(screen_size(3024, 4032), (1440, 1920));
        assert_eq!(screen_size(1441, 1), (1440, 1));
        for none in ["1440x2000.jpg", "1200x900.jpg", "4000x3000.gif"] {
            assert!(name(none).screen().is_none(), "{none}");
        }
        assert!(
            photo.screen().unwrap().is_scaled_copy_size()
                && photo.phone().unwrap().is_scaled_copy_size()
        );
        assert!(
            !name("1440x1080.png").is_scaled_copy_size()
                && !name("1441x1080.jpg").is_scaled_copy_size()
        );
    }

    #[test]
    fn a_still_pictures_small_copies_are_named_alike_from_any_source() {
        let hash = hash();
        let name = |text: &str| PictureName::parse(&format!("{hash}-{text}")).unwrap();
        let smalls = |of: &PictureName| {
            SMALL_SIZES.map(|size| of.small(size).map(|small| small.to_string()))
        };
        let expected = [Some(format!("{hash}-128x96.jpg")), Some(format!("{hash}-256x192.jpg"))];
        let wide = name("4000x3000.png");
        assert_eq!(
            smalls(&wide),
            expected,
            "a wide PNG's phones' variant is a JPEG, and so are its copies"
        );
        assert_eq!(smalls(&wide.phone().unwrap()), expected);
        assert_eq!(
            smalls(&name("3000x8000.jpg")),
            expected,
            "a tall picture is cropped to the box"
        );
        assert_eq!(
            smalls(&name("640x480.png")),
            [Some(format!("{hash}-128x96.png")), Some(format!("{hash}-256x192.png"))],
            "a narrow PNG keeps its transparency"
        );
        assert_eq!(
            smalls(&name("200x150.jpg")),
            [Some(format!("{hash}-128x96.jpg")), None],
            "never made larger"
        );
        assert_eq!(
            smalls(&name("256x192.jpg")),
            [Some(format!("{hash}-128x96.jpg")), None],
            "the picture is its own 2x"
        );
        assert_eq!(smalls(&name("128x96.jpg")), [None, None]);
        assert_eq!(
            smalls(&name("4000x90.jpg")),
            [None, None],
            "a panorama lower than the box: its phones' copy is 960x22"
        );
        assert_eq!(smalls(&name("640x480.gif")), [None, None], "an animation keeps its frames");
        assert_eq!(
            wide.copies().len(),
            4,
            "its phones' copy, its screens' copy and two small copies"
        );
        assert!(name("128x96.png").is_small_size() && name("256x192.jpg").is_small_size());
        assert!(!name("256x193.jpg").is_small_size() && !name("128x96.gif").is_small_size());
    }

    #[test]
    fn an_address_round_trips_through_a_url_whatever_its_ids_hold() {
        let name = PictureName::parse(&format!("{}-10x10.jpg", hash())).unwrap();
        for owner in ["2f1c-user", "a b", "quote\"s(x)<y>&z", "é"] {
            let Some(address) = PictureAddress::parse(owner, "post-1", name.as_str()) else {
                assert!(validate_id(owner).is_err());
                continue;
            };
            let url = address.url();
            assert!(
                url.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-._~%/".contains(&byte)),
                "{url}"
            );
            assert_eq!(PictureAddress::of_url(&url), Some(address));
        }
        for bad in [
            "/pictures/a/b",
            "/pictures/a/b/c/d",
            "/pictures/../b/x",
            "/pictures/a%2Fb/c/x",
            "/elsewhere/a/b/x",
        ] {
            assert_eq!(PictureAddress::of_url(bad), None, "{bad}");
        }
    }
}
