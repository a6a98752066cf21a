// fmt's compiled part, once for the whole program. The headers are used without FMT_HEADER_ONLY: with it, each of the
// some 65 translation units that include <fmt/format.h> compiled fmt's implementation again (4-10 s each at -O3, most
// of a plain build's time). Debian's libfmt-dev has no static library and its shared one is built against libstdc++,
// which the wheel's libc++ build cannot link, so the implementation is compiled here with the rest, by every compiler
// that builds coldstart. What follows instantiates the templates that <fmt/format.h> declares extern.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
