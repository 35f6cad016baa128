/*
 * embed.S - the page's files built into the binary (.incbin), so that
 * `leakscope serve` fetches nothing at run time.  CHARTJS is the path of
 * Debian's libjs-chart.js (the Makefile passes it).  web/assets.c lists
 * them with their paths and types.
 */
#define ASSET(sym, file)				\
	.global sym; .global sym##_len;			\
	.balign 16; sym: .incbin file; sym##_end:	\
	.byte 0; .balign 8; sym##_len: .quad sym##_end - sym

	.section .rodata
ASSET(ls_web_asset_index_html, "web/page/index.html")
ASSET(ls_web_asset_app_js, "web/page/app.js")
ASSET(ls_web_asset_app_css, "web/page/app.css")
ASSET(ls_web_asset_chart_js, CHARTJS)

	.section .note.GNU-stack,"",@progbits
