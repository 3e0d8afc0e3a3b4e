//! A picture as the blog keeps it: its pixels alone, in one of four formats, with the smaller
//! copies the lists, phones and screens take, and a file that is not a whole picture refused.

use super::*;

#[test]
fn a_phones_photo_loses_its_gps_position() {
    let upload = with_segment(&encoded(&photo(), ImageFormat::Jpeg), &exif_segment());
    assert!(contains(&upload, b"Exif\0\0"), "the upload carries EXIF");
    let prepared = prepare(&upload, &Limits::default()).unwrap();
    let stored = &prepared.picture;
    assert_eq!(stored.kind, Kind::Jpeg);
    assert!(!contains(&stored.bytes, b"Exif"), "no EXIF is kept");
    assert!(!contains(&stored.bytes, &2958_u32.to_le_bytes()), "nor the latitude");
    // Read back as a reader's browser would: upright (turned as the EXIF said), 20×40.
    let shown = image::load_from_memory(&stored.bytes).unwrap();
    assert_eq!((stored.width, stored.height, shown.width(), shown.height()), (20, 40, 20, 40));
    assert_eq!(
        stored.name.to_string(),
        format!("{}-20x40.jpg", stored.name.hash()),
        "named by its bytes and size"
    );
    assert_eq!(
        prepare(&upload, &Limits::default()).unwrap().picture.name,
        stored.name,
        "named by its bytes"
    );
}

/// Its colour profile (a phone's Display P3) is the one thing kept beside the pixels: without it
/// the photo would show duller. EXIF still goes.
#[test]
fn a_photos_exif_is_dropped_but_its_colour_profile_kept() {
    use image::ImageEncoder;
    let profile = b"a Display P3 colour profile, as a phone writes it".repeat(8);
    let mut jpeg = Vec::new();
    let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90);
    encoder.set_icc_profile(profile.clone()).unwrap();
    let wide = RgbImage::from_fn(2000, 1200, |x, _| Rgb([(x % 256) as u8, 40, 200]));
    wide.write_with_encoder(encoder).unwrap();
    let upload = with_segment(&jpeg, &exif_segment());
    let prepared = prepare(&upload, &Limits::default()).unwrap();
    for stored in [&prepared.picture, prepared.phone.as_ref().expect("a phones' variant")] {
        let mut decoder =
            image::codecs::jpeg::JpegDecoder::new(Cursor::new(&stored.bytes)).unwrap();
        assert_eq!(
            image::ImageDecoder::icc_profile(&mut decoder).unwrap(),
            Some(profile.clone()),
            "{}",
            stored.name
        );
        assert!(!contains(&stored.bytes, b"Exif"), "{}", stored.name);
    }
}

#[test]
fn a_jpeg_that_is_also_an_html_page_keeps_only_its_pixels() {
    let mut upload = encoded(&photo(), ImageFormat::Jpeg);
    upload.extend(b"<html><script>alert(document.cookie)</script></html>");
    let comment = [&[0xFF, 0xFE, 0x00, 0x1A][..], b"<script>alert(1)</script>"].concat();
    let upload = with_segment(&upload, &comment);
    let stored = prepare(&upload, &Limits::default()).unwrap().picture;
    assert!(!contains(&stored.bytes, b"<script"), "nothing but pixels");
    assert!(!contains(&stored.bytes, b"<html"));
}

#[test]
fn only_the_four_formats_recognised_by_their_bytes_are_taken() {
    let limits = Limits::default();
    assert_eq!(prepare(b"", &limits).unwrap_err(), PictureError::Empty);
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
    assert_eq!(prepare(svg, &limits).unwrap_err(), PictureError::NotAPicture(None));
    assert_eq!(
        prepare(b"<!doctype html><p>hi", &limits).unwrap_err(),
        PictureError::NotAPicture(None)
    );
    let bmp = b"BM\x3a\0\0\0\0\0\0\0\x36\0\0\0";
    assert!(
        matches!(prepare(bmp, &limits).unwrap_err(), PictureError::NotAPicture(Some(found)) if found == "Bmp")
    );
    for (format, kind) in [(ImageFormat::Png, Kind::Png), (ImageFormat::Gif, Kind::Gif)] {
        let stored = prepare(&encoded(&photo(), format), &limits).unwrap().picture;
        assert_eq!((stored.kind, stored.width, stored.height), (kind, 40, 20), "{format:?}");
        assert_eq!(image::guess_format(&stored.bytes).unwrap(), format);
    }
}

#[test]
fn webp_is_kept_as_jpeg_or_as_png_where_it_is_transparent() {
    let limits = Limits::default();
    let opaque = prepare(&encoded(&photo(), ImageFormat::WebP), &limits).unwrap().picture;
    assert_eq!(opaque.kind, Kind::Jpeg);
    let clear = DynamicImage::ImageRgba8(RgbaImage::from_pixel(10, 10, Rgba([0, 0, 0, 0])));
    let transparent = prepare(&encoded(&clear, ImageFormat::WebP), &limits).unwrap().picture;
    assert_eq!(transparent.kind, Kind::Png);
    assert_eq!(
        image::load_from_memory(&transparent.bytes).unwrap().to_rgba8().get_pixel(0, 0)[3],
        0,
        "still transparent"
    );
}

#[test]
fn only_a_wide_picture_gets_a_smaller_jpeg_for_phones() {
    let limits = Limits::default();
    let wide = DynamicImage::ImageRgb8(RgbImage::from_pixel(2000, 100, Rgb([10, 120, 10])));
    let prepared = prepare(&encoded(&wide, ImageFormat::Png), &limits).unwrap();
    let phone = prepared.phone.expect("a variant for phones");
    assert_eq!((phone.kind, phone.width, phone.height), (Kind::Jpeg, 960, 48));
    assert!(prepare(&encoded(&photo(), ImageFormat::Png), &limits).unwrap().phone.is_none());
}

/// A still picture gets small copies for the lists' box (128 × 96 and 256 × 192, cropped about
/// its middle), JPEG, or PNG where the picture is a PNG no wider than the phones' size
/// (transparency kept); never larger than the picture; an animation none.
#[test]
fn a_still_picture_gets_small_copies_for_the_lists_box_cropped_about_its_middle() {
    let limits = Limits::default();
    let sizes = |prepared: &blog::testing::pictures::Prepared| -> Vec<(Kind, u32, u32)> {
        prepared.small.iter().map(|small| (small.kind, small.width, small.height)).collect()
    };
    // A tall photo: red at the top and bottom, green between; the box keeps the 4:3 of its
    // middle (rows 937 to 2062), all green.
    let tall = RgbImage::from_fn(1500, 3000, |_, y| {
        if (880..2120).contains(&y) { Rgb([0, 200, 0]) } else { Rgb([200, 0, 0]) }
    });
    let prepared =
        prepare(&encoded(&DynamicImage::ImageRgb8(tall), ImageFormat::Jpeg), &limits).unwrap();
    assert_eq!(sizes(&prepared), [(Kind::Jpeg, 128, 96), (Kind::Jpeg, 256, 192)]);
    for small in &prepared.small {
        assert!(
            small.name.as_str().starts_with(prepared.picture.name.hash()),
            "named after its picture: {}",
            small.name
        );
        let pixels = image::load_from_memory(&small.bytes).unwrap().to_rgb8();
        for (x, y) in
            [(0, 0), (small.width / 2, small.height / 2), (small.width - 1, small.height - 1)]
        {
            let pixel = pixels.get_pixel(x, y);
            assert!(
                pixel[1] > 150 && pixel[0] < 60,
                "the middle only: {pixel:?} at {x},{y} of {}",
                small.name
            );
        }
    }
    // A narrow PNG with transparency: PNG copies, still transparent.
    let clear = RgbaImage::from_fn(640, 480, |x, _| {
        if x < 320 { Rgba([0, 0, 0, 0]) } else { Rgba([0, 0, 200, 255]) }
    });
    let prepared =
        prepare(&encoded(&DynamicImage::ImageRgba8(clear), ImageFormat::Png), &limits).unwrap();
    assert_eq!(sizes(&prepared), [(Kind::Png, 128, 96), (Kind::Png, 256, 192)]);
    let small = image::load_from_memory(&prepared.small[0].bytes).unwrap().to_rgba8();
    assert_eq!(
        (small.get_pixel(0, 0)[3], small.get_pixel(127, 0)[3]),
        (0, 255),
        "transparent where the picture is"
    );
    // Smaller than the 2× box: the 1× copy only (the picture is its own 2×); smaller than the
    // 1× box, or an animation: none.
    let small_photo = DynamicImage::ImageRgb8(RgbImage::from_pixel(200, 150, Rgb([9, 9, 9])));
    let prepared = prepare(&encoded(&small_photo, ImageFormat::Jpeg), &limits).unwrap();
    assert_eq!(sizes(&prepared), [(Kind::Jpeg, 128, 96)]);
    assert!(prepare(&encoded(&photo(), ImageFormat::Jpeg), &limits).unwrap().small.is_empty());
    let gif = encoded(
        &DynamicImage::ImageRgba8(RgbaImage::from_pixel(300, 200, Rgba([9, 9, 9, 255]))),
        ImageFormat::Gif,
    );
    assert!(prepare(&gif, &limits).unwrap().small.is_empty());
}

/// A phone's photo's 2× small copy, the larger, is at most 20 KB: a list of ten posts with
/// pictures costs a reader about 20 KB a picture, not the phones' copy's 100 KB or more.
#[test]
fn a_photos_small_copies_are_at_most_20_kb() {
    for (width, height, seed) in [(4032, 3024, 1), (3024, 4032, 2), (1600, 900, 3)] {
        let prepared =
            prepare(&common::hostile::photo_jpeg(width, height, seed), &Limits::default()).unwrap();
        let phone = prepared.phone.as_ref().unwrap().bytes.len();
        for small in &prepared.small {
            // (`-- --nocapture` shows the figures BENCHMARKS.md records.)
            eprintln!(
                "a {width} × {height} photo: its {}×{} copy {} bytes, its phones' copy {phone}",
                small.width,
                small.height,
                small.bytes.len()
            );
            assert!(
                small.bytes.len() <= 20_000,
                "{}: {} bytes (its phones' copy: {phone})",
                small.name,
                small.bytes.len()
            );
        }
        assert_eq!(prepared.small.len(), 2);
    }
}

/// A photo wider than 1,440 pixels gets a screens' copy that wide (as high as its proportions
/// say, a JPEG), for a post page's column at 2× and 3×: smaller than the photo, a fraction of a
/// 12-megapixel one. A picture no wider gets none, and neither does an animation.
#[test]
fn a_photos_screen_copy_is_1440_pixels_wide() {
    // The picture tests' photos (grain 8), then the benches' (grain 20: `handler cost` weighs a
    // post page's picture by its screens' copy).
    for (width, height, seed, grain, screen_height) in [
        (4032, 3024, 1, 8, 1080),
        (3024, 4032, 2, 8, 1920),
        (1600, 900, 3, 8, 810),
        (4032, 3024, 1, 20, 1080),
    ] {
        let photo = common::hostile::photo_jpeg_with_grain(width, height, seed, grain);
        let prepared = prepare(&photo, &Limits::default()).unwrap();
        let screen = prepared.screen.as_ref().expect("a screens' copy");
        // (`-- --nocapture` shows the figures BENCHMARKS.md records, and `handler cost` weighs.)
        eprintln!(
            "a {width} × {height} photo, grain {grain}: {} bytes, its {}×{} screens' copy {} bytes, its phones' copy {}",
            prepared.picture.bytes.len(),
            screen.width,
            screen.height,
            screen.bytes.len(),
            prepared.phone.as_ref().unwrap().bytes.len()
        );
        assert_eq!((screen.kind, screen.width, screen.height), (Kind::Jpeg, 1440, screen_height));
        let picture = prepared.picture.name.as_str();
        assert_eq!(
            screen.name.as_str(),
            format!("{}-1440x{screen_height}.jpg", &picture[..64]),
            "named from the picture's hash"
        );
        let decoded = image::load_from_memory(&screen.bytes).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (1440, screen_height));
        let (copy, whole) = (screen.bytes.len(), prepared.picture.bytes.len());
        assert!(copy < whole, "{copy} of {whole}");
        if width * height >= 12_000_000 {
            assert!(copy * 5 < whole, "{copy} of {whole}");
        }
    }
    let limits = Limits::default();
    let narrow = DynamicImage::ImageRgb8(RgbImage::from_pixel(1440, 100, Rgb([9, 9, 9])));
    let prepared = prepare(&encoded(&narrow, ImageFormat::Jpeg), &limits).unwrap();
    assert!(
        prepared.phone.is_some() && prepared.screen.is_none(),
        "1,440 pixels wide: its own screens' copy"
    );
    let gif = encoded(
        &DynamicImage::ImageRgba8(RgbaImage::from_pixel(1600, 100, Rgba([9, 9, 9, 255]))),
        ImageFormat::Gif,
    );
    assert!(prepare(&gif, &limits).unwrap().screen.is_none(), "an animation keeps its frames");
}

#[test]
fn a_small_file_that_says_it_is_huge_is_refused_from_its_header() {
    let limits = Limits::default();
    // 7,000 × 7,000 of one colour: 49 megapixels in a file of a few dozen kilobytes.
    let bomb =
        encoded(&DynamicImage::ImageLuma8(image::GrayImage::new(7_000, 7_000)), ImageFormat::Png);
    assert!(bomb.len() < 1_000_000, "{} bytes", bomb.len());
    assert!(matches!(
        prepare(&bomb, &limits).unwrap_err(),
        PictureError::TooManyPixels { width: 7_000, height: 7_000, .. }
    ));
    let long =
        encoded(&DynamicImage::ImageLuma8(image::GrayImage::new(8_001, 1)), ImageFormat::Png);
    assert!(matches!(prepare(&long, &limits).unwrap_err(), PictureError::TooManyPixels { .. }));
    let big = vec![0xFF; limits.max_bytes + 1];
    assert!(matches!(prepare(&big, &limits).unwrap_err(), PictureError::TooLarge { .. }));
}

/// A JPEG cut short inside its scan, with its end marker put back (or another scan's header
/// and then the end marker): its markers are all there, and the decoder would fill the rows
/// that are missing; refused as cut off, baseline or progressive. Whole, each is taken.
#[test]
fn a_jpeg_cut_short_with_its_end_marker_put_back_is_refused() {
    let baseline = common::hostile::photo_jpeg(160, 120, 1);
    let progressive = common::hostile::seed("progressive.jpg");
    for (what, jpeg) in [("baseline", &baseline), ("progressive", &progressive)] {
        assert!(prepare(jpeg, &Limits::default()).is_ok(), "{what}: whole, it is taken");
        let scan = jpeg.windows(2).rposition(|marker| marker == [0xFF, 0xDA]).unwrap();
        let scan_header = jpeg
            [scan..scan + 2 + usize::from(u16::from_be_bytes([jpeg[scan + 2], jpeg[scan + 3]]))]
            .to_vec();
        // A progressive JPEG cut inside its first scan (its DC coefficients) and inside its last.
        let cuts = match what {
            "baseline" => vec![1000],
            _ => {
                let first = jpeg.windows(2).position(|marker| marker == [0xFF, 0xDA]).unwrap();
                let second = first
                    + 2
                    + jpeg[first + 2..]
                        .windows(2)
                        .position(|marker| marker == [0xFF, 0xDA])
                        .unwrap();
                vec![first + (second - first) * 3 / 4, scan + (jpeg.len() - scan) / 2]
            }
        };
        for (cut_at, after) in cuts.into_iter().flat_map(|cut_at| {
            [(cut_at, vec![0xFF, 0xD9]), (cut_at, [&scan_header[..], &[0x00, 0xFF, 0xD9]].concat())]
        }) {
            let cut = [&jpeg[..cut_at], &after[..]].concat();
            let refused = prepare(&cut, &Limits::default()).unwrap_err();
            assert!(
                matches!(&refused, PictureError::Unreadable(why) if why.contains("cut off")),
                "{what}, {} of {} bytes and {after:02X?}: {refused}",
                cut_at,
                jpeg.len()
            );
        }
    }
    // The picture fuzz target's seed of the same.
    let seed = common::hostile::seed("truncated-half-end-marker.jpg");
    let refused = prepare(&seed, &Limits::default()).unwrap_err();
    assert!(
        matches!(&refused, PictureError::Unreadable(why) if why.contains("cut off")),
        "{refused}"
    );
}

#[test]
fn a_truncated_or_damaged_picture_is_refused() {
    let jpeg = encoded(&photo(), ImageFormat::Jpeg);
    assert!(matches!(
        prepare(&jpeg[..jpeg.len() / 2], &Limits::default()).unwrap_err(),
        PictureError::Unreadable(_)
    ));
    let mut png = encoded(&photo(), ImageFormat::Png);
    let middle = png.len() / 2;
    png[middle..middle + 8].copy_from_slice(b"damaged!");
    assert!(matches!(prepare(&png, &Limits::default()).unwrap_err(), PictureError::Unreadable(_)));
}

#[test]
fn an_animation_is_kept_frame_by_frame_within_its_limits() {
    let limits = Limits::default();
    let stored = prepare(&animated(3), &limits).unwrap().picture;
    assert_eq!(stored.kind, Kind::Gif);
    let mut options = gif::DecodeOptions::new();
    options.skip_frame_decoding(true);
    let mut decoder = options.read_info(Cursor::new(&stored.bytes)).unwrap();
    let mut frames = 0;
    while decoder.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 3);
    assert!(matches!(
        prepare(&animated(10_000), &limits).unwrap_err(),
        PictureError::TooManyFrames { .. }
    ));
}
