/*
 * assets.c - the page's built-in files (web/embed.S embeds them).
 */
#include <string.h>
#include "internal.h"
#include "assets.h"

#define EXTERN_ASSET(sym)				\
	extern const unsigned char sym[];		\
	extern const unsigned long long sym##_len

EXTERN_ASSET(ls_web_asset_index_html);
EXTERN_ASSET(ls_web_asset_app_js);
EXTERN_ASSET(ls_web_asset_app_css);
EXTERN_ASSET(ls_web_asset_chart_js);

#define HTML "text/html; charset=utf-8"
#define JS "text/javascript; charset=utf-8"

static const struct ls_web_asset assets[] = {
	{ "/", HTML, ls_web_asset_index_html, &ls_web_asset_index_html_len },
	{ "/index.html", HTML, ls_web_asset_index_html,
	  &ls_web_asset_index_html_len },
	{ "/app.js", JS, ls_web_asset_app_js, &ls_web_asset_app_js_len },
	{ "/app.css", "text/css; charset=utf-8", ls_web_asset_app_css,
	  &ls_web_asset_app_css_len },
	{ "/chart.js", JS, ls_web_asset_chart_js, &ls_web_asset_chart_js_len },
};

const struct ls_web_asset *ls_web_asset_find(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(assets) / sizeof(assets[0]); i++)
		if (!strcmp(path, assets[i].path))
			return &assets[i];
	return NULL;
}
