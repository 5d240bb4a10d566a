// Text from a run (host names, stack frames, arguments, workers' output) as
// it goes into report.html: every byte of it is untrusted, and need not be
// UTF-8. The page is the one place that could run what it shows, so all of
// it passes through here, in text and in attribute values alike.
#pragma once

#include <string>
#include <string_view>

namespace gangrun::report {

// text with & < > " ' as character references, each byte that is not part
// of valid UTF-8 and each control character but tab and newline as U+FFFD:
// safe between tags and inside a quoted attribute value, of HTML and of the
// SVG inline in it ("]]>" becomes "]]&gt;", "</script>" "&lt;/script&gt;").
std::string html_escape(std::string_view text);

}  // namespace gangrun::report
