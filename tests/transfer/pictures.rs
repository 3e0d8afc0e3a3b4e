//! Pictures in an import: stored as an upload stores them, refused where an upload would be
//! or the blog keeps none, and a writer over the quota keeps them.

use super::*;

/// The sample with two pictures of ada's post: the file's text and the pictures' bytes.
fn with_two_pictures(sample: &Sample) -> (String, [Vec<u8>; 2]) {
    let pictures = [common::noise_png_of(4, 4, 1), common::noise_png_of(4, 4, 2)];
    let items =
        [sample.whole.clone(), pictures.iter().map(|bytes| picture_of(bytes)).collect()].concat();
    (sealed(&items), pictures)
}

/// A picture, where the blog keeps none, is refused and nothing is imported.
#[tokio::test]
async fn a_picture_where_the_blog_keeps_none_imports_nothing() {
    let target = Target::new().await;
    let (text, _) = with_two_pictures(&Sample::new());
    let imported = target.import(&text, &[("BLOG_PICTURES", "off")]);
    target.refused(&imported, "line 7: a picture, and this blog keeps no pictures", &target.before);
}

/// The whole file is taken once the names are its own; a writer over this blog's quota keeps
/// their pictures, byte for byte, and the operator is told.
#[tokio::test]
async fn a_writer_over_the_quota_keeps_the_imported_pictures() {
    let target = Target::new().await;
    let (text, pictures) = with_two_pictures(&Sample::new());
    let imported = target.import(&text, &[("BLOG_PICTURES_PER_WRITER", "1")]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert!(
        stderr(&imported).contains("a writer keeps more pictures than this blog's quota"),
        "{}",
        stderr(&imported)
    );
    let blog = Handler::start(target.to.path(), &[]);
    for bytes in pictures {
        let name = picture_of(&bytes)["name"].as_str().unwrap().to_owned();
        let found = bytes_at(&blog.base, &format!("/pictures/ada/p1/{name}")).await;
        assert_eq!(found, (200, bytes), "the picture, byte for byte");
    }
    blog.stop();
}

/// Each picture an upload would refuse is refused by an import, naming its line and saying
/// why, and nothing is imported: the hostile files the upload tests send, a page of HTML named
/// as a JPEG by its own hash, a JPEG cut short with its end marker put back, a photo whose EXIF
/// turns it to another size than its name says, one that needs more than the pictures' memory,
/// and bytes named as the phones' copy of no picture of the post.
#[tokio::test]
async fn a_picture_an_upload_would_refuse_imports_nothing() {
    use common::hostile;
    let target = Target::new().await;
    let sample = Sample::new();
    let html = b"<!doctype html><html><script>alert(document.cookie)</script></html>".to_vec();
    let half = hostile::photo_jpeg(1600, 900, 2);
    let half = half[..half.len() / 2].to_vec();
    let cut = [&hostile::photo_jpeg(160, 120, 4)[..1000], &[0xFF, 0xD9]].concat();
    let fake_phone = json!({"type": "picture", "postId": "p1", "userId": "ada",
        "name": format!("{}-960x540.jpg", "ab".repeat(32)), "bytes": base64_of(&html)});
    let fake_phone_said = format!(
        "line 7, `bytes`: \"{}-960x540.jpg\" has bytes other than its name says, and is a copy of no picture of post \"p1\"",
        "ab".repeat(32)
    );
    // A picture's line, what the refusal says, and the settings the import runs with.
    type Case<'a> = (Value, &'a str, &'a [(&'a str, &'a str)]);
    // 7,000 × 7,000 of one colour: 49 megapixels in a PNG of a few dozen kilobytes.
    let bomb = {
        let mut png = std::io::Cursor::new(Vec::new());
        image::GrayImage::new(7_000, 7_000).write_to(&mut png, image::ImageFormat::Png).unwrap();
        png.into_inner()
    };
    let mut damaged = common::noise_png_of(40, 20, 3);
    let middle = damaged.len() / 2;
    damaged[middle..middle + 8].copy_from_slice(b"damaged!");
    let cases: Vec<Case<'_>> = vec![
        (
            named_picture(&html, (10, 10), "jpg"),
            "line 7, `bytes`: this is not a JPEG, PNG, WebP or GIF picture",
            &[],
        ),
        (
            named_picture(&hostile::seed("not-a-picture.bmp"), (1, 1), "png"),
            "line 7, `bytes`: this is not a JPEG, PNG, WebP or GIF picture (it looks like Bmp)",
            &[],
        ),
        (
            named_picture(&hostile::seed("not-a-picture.svg"), (1, 1), "png"),
            "line 7, `bytes`: this is not a JPEG",
            &[],
        ),
        (
            named_picture(&bomb, (10, 10), "png"),
            "line 7, `bytes`: the picture is 7000×7000 pixels",
            &[],
        ),
        (
            named_picture(&damaged, (40, 20), "png"),
            "line 7, `bytes`: the picture cannot be read (truncated or damaged)",
            &[],
        ),
        (
            named_picture(&hostile::gif_canvas_with_tiny_frames(), (6000, 6000), "gif"),
            "line 7, `bytes`: the animation has more than",
            &[],
        ),
        (
            named_picture(&hostile::png_with_inflating_profile(), (1, 1), "png"),
            "line 7, `bytes`: the picture's colour profile is over",
            &[],
        ),
        (
            named_picture(&cut, (160, 120), "jpg"),
            "line 7, `bytes`: the picture cannot be read (truncated or damaged): the JPEG's coded data ends before its last row: it is cut off",
            &[],
        ),
        (
            named_picture(&half, (1600, 900), "jpg"),
            "line 7, `bytes`: the picture cannot be read (truncated or damaged): the JPEG ends before its end marker",
            &[],
        ),
        (
            named_picture(&photo_with_gps(), (40, 20), "jpg"),
            "line 7, `name`: the picture is a 20×40 JPG, not what its name",
            &[],
        ),
        (
            named_picture(&hostile::photo_jpeg(1600, 900, 5), (1600, 900), "jpg"),
            "or import with a larger BLOG_PICTURE_MEMORY_MB",
            &[("BLOG_PICTURE_MEMORY_MB", "16")],
        ),
        (fake_phone, &fake_phone_said, &[]),
    ];
    for (picture, said, settings) in cases {
        let items = [sample.whole.clone(), vec![picture]].concat();
        target.refused(&target.import(&sealed(&items), settings), said, &target.before);
    }
}

/// A phone's photo with its GPS position, named by its own hash as an export names a picture,
/// is taken as an upload takes it: encoded anew, upright, without its EXIF, under the name its
/// new bytes make, which its post's Markdown names instead; a wide JPEG likewise, with a phones'
/// copy made from it (the file's is not taken). No picture stored or served carries the
/// position.
#[tokio::test]
async fn an_imported_photo_is_stored_as_an_upload_stores_it() {
    let target = Target::new().await;
    let sample = Sample::new();
    let (gps, wide) = (photo_with_gps(), common::hostile::photo_jpeg(1600, 900, 5));
    // A JPEG that is also an HTML page: its pixels only are kept.
    let page_too = [
        &common::hostile::photo_jpeg(40, 20, 2)[..],
        b"<html><script>alert(document.cookie)</script></html>",
    ]
    .concat();
    let (gps_line, wide_line) =
        (named_picture(&gps, (20, 40), "jpg"), named_picture(&wide, (1600, 900), "jpg"));
    let phone_line = json!({"type": "picture", "postId": "p1", "userId": "ada",
        "name": format!("{}-960x540.jpg", sha256_hex(&wide)), "bytes": base64_of(&common::hostile::photo_jpeg(960, 540, 6))});
    let (gps_name, wide_name) =
        (gps_line["name"].as_str().unwrap(), wide_line["name"].as_str().unwrap());
    let mut post = sample.post.clone();
    post["content"] = json!(format!(
        "![Here](/pictures/ada/p1/{gps_name})\n\n![Wide](/pictures/ada/p1/{wide_name})"
    ));
    let items = vec![
        a_user("ada", "ada"),
        a_user("bob", "bob"),
        post,
        sample.comment.clone(),
        sample.like.clone(),
        gps_line.clone(),
        wide_line.clone(),
        phone_line,
        named_picture(&page_too, (40, 20), "jpg"),
    ];
    let imported = target.import(&sealed(&items), &[]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert!(stderr(&imported).contains("4 pictures"), "{}", stderr(&imported));
    // The import made the wide photo's small copies, as an upload makes them (the others are
    // smaller than the lists' box): stored before the blog serves a request.
    let small: Vec<String> = common::files_under(&target.to.path().join("pictures"))
        .iter()
        .map(|file| file.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| name.ends_with("-128x96.jpg") || name.ends_with("-256x192.jpg"))
        .collect();
    assert_eq!(small.len(), 2, "{small:?}");

    let blog = Handler::start(target.to.path(), &[]);
    let stored: Value =
        reqwest::get(format!("{}/api/posts/p1", blog.base)).await.unwrap().json().await.unwrap();
    let content = stored["content"].as_str().unwrap().to_owned();
    assert!(
        !content.contains(&sha256_hex(&gps)) && !content.contains(&sha256_hex(&wide)),
        "named anew: {content}"
    );
    let names: Vec<&str> =
        content.match_indices("/pictures/ada/p1/").map(|(at, _)| &content[at..]).collect();
    assert_eq!(names.len(), 2, "{content}");
    for (prefix, (width, height)) in names.iter().zip([(20, 40), (1600, 900)]) {
        let url = &prefix[..prefix.find(')').unwrap()];
        assert!(url.ends_with(&format!("-{width}x{height}.jpg")), "the same size and kind: {url}");
        let (status, bytes) = bytes_at(&blog.base, url).await;
        assert_eq!(status, 200, "{url}");
        assert_eq!(
            url[url.rfind('/').unwrap() + 1..][..64],
            sha256_hex(&bytes),
            "named by the bytes served"
        );
        let shown = image::load_from_memory(&bytes).unwrap();
        assert_eq!((shown.width(), shown.height()), (width, height), "{url}: upright, as named");
        assert!(
            !contains(&bytes, b"Exif") && !contains(&bytes, &2958_u32.to_le_bytes()),
            "{url}: no EXIF, no GPS"
        );
    }
    let wide_url = names[1][..names[1].find(')').unwrap()].to_owned();
    let phone_url = wide_url.replace("-1600x900.jpg", "-960x540.jpg");
    let (status, phone) = bytes_at(&blog.base, &phone_url).await;
    assert_eq!(status, 200, "the phones' copy is made from the picture: {phone_url}");
    let phone = image::load_from_memory(&phone).unwrap();
    assert_eq!((phone.width(), phone.height()), (960, 540));
    for name in [gps_name, wide_name] {
        assert_eq!(
            bytes_at(&blog.base, &format!("/pictures/ada/p1/{name}")).await.0,
            404,
            "{name}: the file's name is not stored"
        );
    }
    let page = reqwest::get(format!("{}/posts/p1", blog.base)).await.unwrap().text().await.unwrap();
    assert!(
        page.contains(&wide_url) && page.contains(&phone_url),
        "the page shows the pictures as stored"
    );
    blog.stop();
    for file in common::files_under(&target.to.path().join("pictures")) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !contains(&bytes, b"Exif") && !contains(&bytes, &2958_u32.to_le_bytes()),
            "{}: no EXIF stored",
            file.display()
        );
        assert!(!contains(&bytes, b"<script"), "{}: nothing but pixels", file.display());
    }
}
