/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTML pages' own files (user/output/html/: the page templates, their
 * style and their scripts, each in its own language), embedded into the
 * binary as they are, each followed by a NUL: html_assets.h names them.
 * Paths are from the top of the source tree, where make runs.
 */
	.section .rodata

	.macro asset name, path
	.global \name
	.type \name, @object
\name:
	.incbin "\path"
	.byte 0
	.size \name, . - \name
	.endm

	asset html_report_html, "user/output/html/report.html"
	asset html_diff_html, "user/output/html/diff.html"
	asset html_style_css, "user/output/html/style.css"
	asset html_common_js, "user/output/html/common.js"
	asset html_report_js, "user/output/html/report.js"
	asset html_diff_js, "user/output/html/diff.js"
	asset html_rss_js, "user/output/html/rss.js"

	.section .note.GNU-stack, "", @progbits
