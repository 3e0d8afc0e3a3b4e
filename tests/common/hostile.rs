//! Uploads made to hurt, as a hostile writer with an account would send them: each is small,
//! passes the checks of a picture's size, and once cost the handler far more memory or time
//! than its bytes. The files themselves are the fuzzers' seeds (`fuzz/corpus/picture`, made by
//! `fuzz/seeds.py`, which says byte by byte what each is), so the tests and the fuzzers start
//! from the same ones.

/// A seed of the picture fuzz target, by its name.
pub(crate) fn seed(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/picture").join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A GIF whose canvas is 6,000 × 6,000 pixels, with 300 frames of one pixel each (7 KB). The
/// image library decodes each frame as a full RGBA canvas (144 MB), so its 300 frames once
/// asked for 43 GB.
pub(crate) fn gif_canvas_with_tiny_frames() -> Vec<u8> {
    seed("hostile-canvas-6000x6000-300-frames.gif")
}

/// A 1 × 1 PNG whose colour profile (iCCP) is 1 GiB of zeros, compressed as tightly as deflate
/// allows (1 MB).
pub(crate) fn png_with_inflating_profile() -> Vec<u8> {
    seed("hostile-iccp-1gib.png")
}

/// A `width` × `height` JPEG that looks like a photo to an encoder (smooth gradients with a
/// little grain), at quality 90: about 1 byte a pixel at most.
pub(crate) fn photo_jpeg(width: u32, height: u32, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let grain = (state % 8) as u8;
        let r = (x * 255 / width.max(1)) as u8;
        let g = (y * 255 / height.max(1)) as u8;
        let b = ((x + y) % 256) as u8;
        image::Rgb([r.saturating_add(grain), g.saturating_add(grain), b.saturating_add(grain)])
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90).encode_image(&pixels).unwrap();
    jpeg
}
