//! Why an upload is not taken as a picture: one error for every step, from the header's reading
//! (`header`) to the encoding anew (`prepare`), so that neither step depends on the other for it.

/// Why an upload is not taken as a picture. Nothing of it is kept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PictureError {
    /// No bytes at all.
    #[error("the upload is empty")]
    Empty,
    /// More bytes than [`Limits::max_bytes`](super::Limits::max_bytes).
    #[error("the picture has {bytes} bytes; at most {max} are taken")]
    TooLarge {
        /// Its size (or as much of it as was read).
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Its bytes are none of the four formats taken (SVG, HTML, a PDF, BMP...).
    #[error("this is not a JPEG, PNG, WebP or GIF picture{}", .0.as_deref().map(|found| format!(" (it looks like {found})")).unwrap_or_default())]
    NotAPicture(Option<String>),
    /// Its header says it is larger than [`Limits`](super::Limits) allow (a decompression bomb is one).
    #[error(
        "the picture is {width}×{height} pixels; at most {max_side} pixels a side and {max_pixels} pixels in all are taken"
    )]
    TooManyPixels {
        /// Its width, as its header says.
        width: u32,
        /// Its height, as its header says.
        height: u32,
        /// The limit on a side.
        max_side: u32,
        /// The limit on width × height.
        max_pixels: u64,
    },
    /// An animation with more frames, or more pixels in all, than [`Limits`](super::Limits) allow.
    #[error(
        "the animation has more than {max_frames} frames, or more than {max_total_pixels} pixels in all, each frame counted as its whole canvas"
    )]
    TooManyFrames {
        /// The limit on frames.
        max_frames: usize,
        /// The limit on all frames' pixels.
        max_total_pixels: u64,
    },
    /// Its header says it would take more memory to decode than the blog gives all the
    /// pictures it decodes at once (`BLOG_PICTURE_MEMORY_MB`).
    #[error(
        "decoding the picture would take {} MiB, and this blog decodes pictures within {} MiB in all; send it smaller (fewer pixels)",
        .needed.div_ceil(1024 * 1024),
        .budget / (1024 * 1024)
    )]
    OverMemory {
        /// What its plan says, in bytes.
        needed: u64,
        /// The pictures' memory, in bytes.
        budget: u64,
    },
    /// Its colour profile is larger than the colour profile limit (`MAX_COLOUR_PROFILE_BYTES`) (inflated, for a PNG's).
    #[error(
        "the picture's colour profile is over {max} bytes; save it with a usual profile (sRGB or Display P3)"
    )]
    ColourProfileTooLarge {
        /// The limit.
        max: usize,
    },
    /// It starts as a picture but cannot be decoded: truncated or corrupt.
    #[error("the picture cannot be read (truncated or damaged): {0}")]
    Unreadable(String),
}
