//! The rendering's tests: what a post or a comment may hold, and what a reader is shown of it.

use super::*;

/// The text of post `p1` by `u1`.
fn html(text: &str) -> String {
    to_html(text, Pictures::Of { owner: "u1", post: "p1" }, 2)
}

#[test]
fn emphasis_headings_lists_and_code_are_rendered() {
    assert_eq!(
        html("Some **bold** and *it* and `x < y`."),
        "<p dir=\"auto\">Some <strong>bold</strong> and <em>it</em> and <code>x &lt; y</code>.</p>\n"
    );
    assert_eq!(
        html("# Title\n## Section\n### Sub"),
        "<h2 dir=\"auto\">Title</h2>\n<h2 dir=\"auto\">Section</h2>\n<h3 dir=\"auto\">Sub</h3>\n"
    );
    assert_eq!(
        to_html("# In a comment\n###### deep", Pictures::None, 3),
        "<h3 dir=\"auto\">In a comment</h3>\n<h6 dir=\"auto\">deep</h6>\n"
    );
    assert_eq!(html("- a\n- b"), "<ul>\n<li dir=\"auto\">a</li>\n<li dir=\"auto\">b</li>\n</ul>\n");
    assert_eq!(
        html("```rust\nfn main() {}\n```"),
        "<pre><code class=\"language-rust\">fn main() {}\n</code></pre>\n"
    );
    assert_eq!(html("~~gone~~"), "<p dir=\"auto\"><del>gone</del></p>\n");
}

#[test]
fn a_typed_line_break_is_a_line_break() {
    assert_eq!(html("one\ntwo"), "<p dir=\"auto\">one<br />\ntwo</p>\n");
}

#[test]
fn raw_html_shows_as_text() {
    assert_eq!(
        html("<script>alert(1)</script>"),
        "<p dir=\"auto\">&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
    );
    assert_eq!(
        html("a <img src=x onerror=alert(1)> b"),
        "<p dir=\"auto\">a &lt;img src=x onerror=alert(1)&gt; b</p>\n"
    );
    assert_eq!(
        html("<div>\n<b>x</b>\n</div>"),
        "<p dir=\"auto\">&lt;div&gt;<br />\n&lt;b&gt;x&lt;/b&gt;<br />\n&lt;/div&gt;</p>\n"
    );
    for attack in [
        "<a href=\"javascript:alert(1)\">x</a>",
        "<!-- c --><style>p{}</style>",
        "<iframe src=//e.com>",
    ] {
        let rendered = html(attack);
        assert!(
            !rendered.contains("<a h")
                && !rendered.contains("<!--")
                && !rendered.contains("<style")
                && !rendered.contains("<iframe"),
            "{rendered}"
        );
    }
}

#[test]
fn links_are_followable_only_to_the_web_mail_or_the_blog() {
    assert_eq!(
        html("[site](https://example.com/a?b=1&c='d') and <mail@example.com>"),
        "<p dir=\"auto\"><a href=\"https://example.com/a?b=1&amp;c=&#x27;d&#x27;\" rel=\"nofollow ugc\">site</a> and \
         <a href=\"mailto:mail@example.com\" rel=\"nofollow ugc\">mail@example.com</a></p>\n"
    );
    assert_eq!(
        html("[post](/posts/p1)"),
        "<p dir=\"auto\"><a href=\"/posts/p1\" rel=\"nofollow ugc\">post</a></p>\n"
    );
    for refused in [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "java%0ascript:alert(1)",
        "data:text/html,x",
        "vbscript:x",
        "&#106;avascript:alert(1)",
    ] {
        assert_eq!(
            html(&format!("[click]({refused})")),
            "<p dir=\"auto\">click</p>\n",
            "{refused}"
        );
    }
    assert_eq!(html("[x](<java\tscript:alert(1)>)"), "<p dir=\"auto\">x</p>\n");
    assert!(!html("[x](\"onmouseover=alert(1))").contains("\" o"), "nothing leaves the attribute");
    assert!(!html("[x](https://e.com/\"onmouseover=\"alert(1))").contains("\"onmouseover"));
}

#[test]
fn bare_urls_become_links_but_not_in_code_or_inside_links() {
    assert_eq!(
        html("See https://example.com/path_(x). Or http://e.org, then."),
        "<p dir=\"auto\">See <a href=\"https://example.com/path_(x)\" rel=\"nofollow ugc\">https://example.com/path_(x)</a>. \
         Or <a href=\"http://e.org\" rel=\"nofollow ugc\">http://e.org</a>, then.</p>\n"
    );
    assert_eq!(html("`https://e.com`"), "<p dir=\"auto\"><code>https://e.com</code></p>\n");
    assert_eq!(html("```\nhttps://e.com\n```"), "<pre><code>https://e.com\n</code></pre>\n");
    assert_eq!(
        html("[https://e.com](https://other.com)"),
        "<p dir=\"auto\"><a href=\"https://other.com\" rel=\"nofollow ugc\">https://e.com</a></p>\n"
    );
    assert_eq!(
        html("ftp://e.com and javascript://x%0aalert(1)"),
        "<p dir=\"auto\">ftp://e.com and javascript://x%0aalert(1)</p>\n"
    );
}

#[test]
fn an_image_is_never_loaded() {
    assert_eq!(
        html("![a cat](https://cats.example/cat.png)"),
        "<p dir=\"auto\"><a href=\"https://cats.example/cat.png\" rel=\"nofollow ugc\" class=\"image\">Image: a cat</a></p>\n"
    );
    assert_eq!(
        html("![](https://e.com/x.png)"),
        "<p dir=\"auto\"><a href=\"https://e.com/x.png\" rel=\"nofollow ugc\" class=\"image\">Image: https://e.com/x.png</a></p>\n"
    );
    assert_eq!(
        html("[![logo](https://e.com/l.png)](https://e.com)"),
        "<p dir=\"auto\"><a href=\"https://e.com\" rel=\"nofollow ugc\">logo</a></p>\n",
        "inside a link, its alt text"
    );
    assert_eq!(html("![x](javascript:alert(1))"), "<p dir=\"auto\">x</p>\n");
    assert!(!html("![x](https://e.com/x.png)").contains("<img"));
}

#[test]
fn only_the_blogs_own_pictures_are_shown() {
    let hash = "0123456789abcdef".repeat(4);
    let wide = format!("/pictures/u1/p1/{hash}-1920x1080.jpg");
    assert_eq!(
        html(&format!("![A *red* \\\"kite\\\"]({wide})")),
        format!(
            "<p dir=\"auto\"><img src=\"{wide}\" alt=\"A red &quot;kite&quot;\" width=\"1920\" height=\"1080\" loading=\"lazy\" \
             decoding=\"async\" srcset=\"/pictures/u1/p1/{hash}-960x540.jpg 960w, /pictures/u1/p1/{hash}-1440x810.jpg 1440w, \
             {wide} 1920w\" \
             sizes=\"(max-width: 44rem) 100vw, 44rem\"></p>\n"
        )
    );
    // Wider than the phones' copy only: no screens' copy.
    let between = format!("/pictures/u1/p1/{hash}-1200x900.jpg");
    assert!(
        html(&format!("![]({between})")).contains(&format!("-960x720.jpg 960w, {between} 1200w\""))
    );
    let small = format!("/pictures/u1/p1/{hash}-20x10.gif");
    assert_eq!(
        html(&format!("![]({small})")),
        format!(
            "<p dir=\"auto\"><img src=\"{small}\" alt=\"\" width=\"20\" height=\"10\" loading=\"lazy\" decoding=\"async\"></p>\n"
        )
    );
    // Not the blog's picture (a bad name, another path), or inside a link: a link, or text.
    for other in
        [format!("/pictures/u1/p1/{hash}.jpg"), format!("/elsewhere/u1/p1/{hash}-20x10.gif")]
    {
        assert!(!html(&format!("![x]({other})")).contains("<img"), "{other}");
    }
    assert!(!html(&format!("[![x]({small})](https://e.com)")).contains("<img"));
}

/// A picture's address is `/pictures/{owner}/{post}/{hash}-{width}x{height}.{ext}`, and the
/// page believes what it says without asking the store. So only the post's own pictures, of a
/// size an upload can have, are shown. Any other is a link to it, as a foreign image is.
#[test]
fn only_the_posts_own_pictures_of_a_size_the_blog_takes_are_shown() {
    let hash = "0".repeat(64);
    let link = |url: &str| {
        format!(
            "<p dir=\"auto\"><a href=\"{url}\" rel=\"nofollow ugc\" class=\"image\">Image: x</a></p>\n"
        )
    };
    for other in [
        format!("/pictures/u2/p1/{hash}-20x10.png"),
        format!("/pictures/u1/p2/{hash}-20x10.png"),
        format!("/pictures/p1/u1/{hash}-20x10.png"),
        format!("/pictures/u1/p1/{hash}-8000x4294967295.png"),
        format!("/pictures/u1/p1/{hash}-8001x1.png"),
        format!("/pictures/u1/p1/{hash}-6325x6325.png"),
        format!("/pictures/u1/p1/{hash}-0x0.png"),
        format!("/pictures/u1/p1/{hash}-0x10.png"),
    ] {
        assert_eq!(html(&format!("![x]({other})")), link(&other), "{other}");
    }
    let own = format!("/pictures/u1/p1/{hash}-8000x5000.png");
    assert!(
        html(&format!("![x]({own})"))
            .starts_with(&format!("<p dir=\"auto\"><img src=\"{own}\" alt=\"x\" width=\"8000\""))
    );
    // The owner is compared as the id it is, whatever escaping its address uses.
    let escaped = to_html(
        &format!("![x](/pictures/u%281%29/p1/{hash}-20x10.png)"),
        Pictures::Of { owner: "u(1)", post: "p1" },
        2,
    );
    assert!(escaped.contains("<img src=\"/pictures/u%281%29/p1/"), "{escaped}");
}

#[test]
fn a_comment_shows_no_picture_not_even_its_posts_own() {
    let own = format!("/pictures/u1/p1/{}-20x10.png", "0".repeat(64));
    let comment = to_html(&format!("![x]({own})"), Pictures::None, 3);
    assert_eq!(
        comment,
        format!(
            "<p dir=\"auto\"><a href=\"{own}\" rel=\"nofollow ugc\" class=\"image\">Image: x</a></p>\n"
        )
    );
    assert!(
        html(&format!("![x]({own})")).contains("<img"),
        "the same text in the post is its picture"
    );
}

#[test]
fn table_columns_carry_no_inline_style() {
    let table = html("| a | b |\n|:--|--:|\n| 1 | 2 |");
    assert!(table.contains("<table>") && table.contains("<td>2</td>"), "{table}");
    assert!(!table.contains("style"), "{table}");
}

#[test]
fn plain_text_is_what_a_reader_reads() {
    let whole = |text| to_plain_text(text, false);
    assert_eq!(
        whole("## Hello\n\nSome **bold** and `code`,\nnext line.\n\n- one\n- two"),
        "Hello Some bold and code, next line. one two"
    );
    assert_eq!(
        whole("```\nlet x = 1;\n```\n[a link](https://e.com) ![an image](x.png)"),
        "let x = 1; a link"
    );
    assert_eq!(whole("<b>as typed</b> and *nix, 2 * 3"), "<b>as typed</b> and *nix, 2 * 3");
}

/// No space at an inline element's edges.
fn plain(text: &str) -> String {
    to_plain_text(text, false)
}

#[test]
fn plain_text_of_the_issues_example_has_no_space_before_punctuation() {
    assert_eq!(
        plain("A **bold**: word, an *em*, and `code`. Also [a link](https://example.org)."),
        "A bold: word, an em, and code. Also a link."
    );
}

#[test]
fn plain_text_of_emphasis_is_its_text_with_no_space_at_its_edges() {
    assert_eq!(plain("an *em*, _em_; *e*m"), "an em, em; em");
    assert_eq!(plain("~~gone~~!"), "gone!");
}

#[test]
fn plain_text_of_strong_is_its_text_with_no_space_at_its_edges() {
    assert_eq!(plain("A **bold**: word, __strong__."), "A bold: word, strong.");
    assert_eq!(plain("un**bold**ed"), "unbolded");
}

#[test]
fn plain_text_of_code_is_its_text_as_typed_with_no_space_at_its_edges() {
    assert_eq!(plain("call `f()`, then `g`."), "call f(), then g.");
    assert_eq!(plain("`a  b`?"), "a b?", "whitespace in code collapses too");
}

#[test]
fn plain_text_of_a_link_is_its_text_with_no_space_at_its_edges() {
    assert_eq!(plain("Also [a link](https://example.org)."), "Also a link.");
    assert_eq!(
        plain("(<https://e.com>), <mail@example.com>;"),
        "(https://e.com), mail@example.com;"
    );
    assert_eq!(plain("[ref][r].\n\n[r]: https://e.com"), "ref.");
}

#[test]
fn plain_text_leaves_an_image_out_with_its_alt_text() {
    assert_eq!(plain("See ![a cat](https://cats.example/cat.png)."), "See.");
    assert_eq!(plain("See ![*a* cat](x.png)!"), "See!");
    assert_eq!(plain("Before ![](x.png) after."), "Before after.");
    assert_eq!(plain("[![logo](l.png)](https://e.com)."), ".");
}

#[test]
fn plain_text_of_a_soft_or_hard_line_break_is_one_space() {
    assert_eq!(plain("one\ntwo"), "one two", "soft");
    assert_eq!(plain("one  \ntwo"), "one two", "hard, by two spaces");
    assert_eq!(plain("one\\\ntwo"), "one two", "hard, by a backslash");
    assert_eq!(plain("**one**\n*two*,\n`three`"), "one two, three", "next to inline elements");
}

#[test]
fn plain_text_of_nested_inline_elements_is_their_text_with_no_space() {
    assert_eq!(plain("***both***, **a *b* c**."), "both, a b c.");
    assert_eq!(plain("[**bold** `code` *em*](https://e.com)!"), "bold code em!");
    assert_eq!(plain("**[l](https://e.com)**:"), "l:");
}

#[test]
fn plain_text_of_a_heading_then_a_paragraph_is_one_space_apart() {
    assert_eq!(plain("## A *title*\n\nThe **text**."), "A title The text.");
    assert_eq!(plain("Title\n=====\nText."), "Title Text.");
    assert_eq!(plain("# Title\n\n\n\n   Text."), "Title Text.");
}

#[test]
fn plain_text_of_a_list_is_its_items_one_space_apart() {
    assert_eq!(plain("Items:\n\n- **one**,\n- `two`;\n- three."), "Items: one, two; three.");
    assert_eq!(plain("1. a\n2. b"), "a b");
    assert_eq!(plain("- a\n  - b\n- c"), "a b c", "a nested list");
    assert_eq!(plain("- a\n\n- b\n\n  more"), "a b more", "a loose list");
}

#[test]
fn plain_text_of_right_to_left_text_keeps_its_order() {
    assert_eq!(plain("שלום **עולם**, מה *נשמע*?"), "שלום עולם, מה נשמע?");
    assert_eq!(plain("# כותרת\n\nפסקה: `קוד`."), "כותרת פסקה: קוד.");
    assert_eq!(
        plain("مرحبا **بالعالم**، كيف [الحال](https://e.com)؟"),
        "مرحبا بالعالم، كيف الحال؟"
    );
    assert_eq!(plain("English **עברית**: mixed."), "English עברית: mixed.");
}

#[test]
fn plain_text_of_other_blocks_is_one_space_apart() {
    assert_eq!(plain("> quoted *text*\n\nafter"), "quoted text after");
    assert_eq!(plain("a\n\n---\n\nb"), "a b");
    assert_eq!(plain("| a | b |\n|---|---|\n| **1** | 2 |"), "a b 1 2");
    assert_eq!(plain("```\nlet x;\n```\nnext"), "let x; next");
    assert_eq!(plain("   \n\n"), "");
}

#[test]
fn plain_text_of_a_cut_text_leaves_out_the_marks_the_cut_left_unpaired() {
    let cut = |text| to_plain_text(text, true);
    assert_eq!(cut("Some **bold te"), "Some bold te");
    assert_eq!(cut("a [link text](https://exa"), "a link text(https://exa");
    // A picture cut in half is left out as a whole one is, its address too.
    assert_eq!(cut("a ![alt te"), "a");
    assert_eq!(cut("A kite. ![A red kite](/pictures/u1/p1/0123"), "A kite.");
    assert_eq!(
        to_plain_text("a ![alt te", false),
        "a ![alt te",
        "typed so in a whole text, it is text"
    );
    assert_eq!(cut("a `code sp"), "a code sp");
    assert_eq!(cut("kept: \\*, 2 * 3, a_b and **whole**"), "kept: *, 2 * 3, a_b and whole");
}

/// An excerpt leaves a post's pictures out, alt text and all: read into the prose, the alt text
/// ran into the next sentence.
#[test]
fn plain_text_leaves_pictures_out() {
    assert_eq!(
        to_plain_text("Up at dawn. ![A red kite](/pictures/u/p/kite.jpg) The kites came.", false),
        "Up at dawn. The kites came."
    );
    assert_eq!(
        to_plain_text("a ![x](y.png) b [![inner](i.png) link](https://e.com)", false),
        "a b link"
    );
}

/// The first picture of a post is the first one its page shows as an image. It is not an image
/// of another post or site, nor one inside a link (which the page shows as its alt text), nor
/// one in a comment. Its alt text is as the page gives it.
#[test]
fn the_first_picture_is_the_first_the_page_shows() {
    let hash = "0123456789abcdef".repeat(4);
    let own = |size: &str| format!("/pictures/u1/p1/{hash}-{size}.jpg");
    let first = |text: &str| {
        first_picture(text, Pictures::Of { owner: "u1", post: "p1" })
            .map(|(address, alt)| (address.url(), alt))
    };
    let text = format!(
        "[![linked]({})](https://e.com) ![other](/pictures/u2/p1/{hash}-20x10.jpg) ![x](https://e.com/x.png) \
         `![code]({})`\n\n![A *red* <b>kite</b>]({}) and ![second]({})",
        own("40x30"),
        own("50x30"),
        own("1920x1080"),
        own("60x30")
    );
    assert_eq!(first(&text), Some((own("1920x1080"), "A red <b>kite</b>".to_owned())));
    // As rendered: the same picture is the first `<img>` of the page, with the same alt text.
    let page = html(&text);
    let img = &page[page.find("<img").unwrap()..];
    assert!(
        img.starts_with(&format!(
            "<img src=\"{}\" alt=\"A red &lt;b&gt;kite&lt;/b&gt;\"",
            own("1920x1080")
        )),
        "{page}"
    );
    // A link the page does not write (a `javascript:` one) leaves the picture in it shown.
    assert_eq!(
        first(&format!("[![in a dead link]({})](javascript:x)", own("40x30"))),
        Some((own("40x30"), "in a dead link".into()))
    );
    assert!(html(&format!("[![in a dead link]({})](javascript:x)", own("40x30"))).contains("<img"));
    assert_eq!(first("No picture, ![only another site's](https://e.com/x.png)."), None);
    assert_eq!(first(&format!("![too big]({})", own("8001x1"))), None, "a size no upload has");
    assert_eq!(
        first_picture(&format!("![x]({})", own("40x30")), Pictures::None),
        None,
        "a comment shows none"
    );
}
