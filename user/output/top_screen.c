// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace top's full-screen view (top.h) on curses: a header, a sparkline
 * of the live heap, the site table, and a key line; or, on Enter, the
 * selected site's stacks. Works from 80x24 up and follows resizes.
 */
#include "top.h"
#include "util.h"

#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER_LINES 4 /* title, figures, sparkline, column names */

struct top_screen {
	bool editing;   /* typing a search */
	bool utf8;      /* block characters for the sparkline */
	size_t top;     /* first row shown */
};

static bool screen_active;

static void screen_restore(void)
{
	if (screen_active) {
		endwin();
		screen_active = false;
	}
}

/* A fatal signal still gives the terminal back. */
static void on_fatal(int sig)
{
	screen_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

struct top_screen *top_screen__open(void)
{
	struct top_screen *t;

	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		errno = ENOTTY;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	setlocale(LC_ALL, "");
	t->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	if (!newterm(NULL, stdout, stdin)) {
		free(t);
		errno = ENOTTY;
		return NULL;
	}
	screen_active = true;
	atexit(screen_restore);
	signal(SIGSEGV, on_fatal);
	signal(SIGABRT, on_fatal);
	signal(SIGBUS, on_fatal);
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	if (has_colors()) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_CYAN, -1);  /* the sparkline */
		init_pair(2, COLOR_BLACK, COLOR_CYAN); /* headings and the selection */
	}
	return t;
}

void top_screen__close(struct top_screen *t)
{
	if (!t)
		return;
	screen_restore();
	free(t);
}

static void cycle(int *i, size_t n)
{
	*i = *i + 1 >= (int)n ? -1 : *i + 1;
}

/* One key while a search is typed. */
static int search_key(struct top_screen *t, struct top_ui *ui, int c)
{
	size_t n = strlen(ui->search);

	if (c == '\n' || c == KEY_ENTER || c == 27) {
		t->editing = false;
		if (c == 27)
			ui->search[0] = 0;
	} else if ((c == KEY_BACKSPACE || c == 127 || c == 8) && n) {
		ui->search[n - 1] = 0;
	} else if (c >= 32 && c < 127 && n + 1 < sizeof(ui->search)) {
		ui->search[n] = (char)c;
		ui->search[n + 1] = 0;
	}
	return TOP_KEY_REDRAW;
}

int top_screen__keys(struct top_screen *t, struct top_ui *ui, const struct top_snapshot *s)
{
	int c, flags = 0;

	while ((c = getch()) != ERR) {
		if (t->editing) {
			flags |= search_key(t, ui, c);
			continue;
		}
		switch (c) {
		case 'q': case 'Q': ui->quit = true; return flags;
		case '1': case '2': case '3': case '4': case '5':
			ui->sort = (enum top_sort)(c - '1');
			flags |= TOP_KEY_REDRAW;
			break;
		case 's': case '\t':
			ui->sort = (enum top_sort)((ui->sort + 1) % TOP_SORT_COUNT);
			flags |= TOP_KEY_REDRAW;
			break;
		case 't': cycle(&ui->thread, s->nthreads); flags |= TOP_KEY_REFILTER; break;
		case 'z': cycle(&ui->zone, s->nzones); flags |= TOP_KEY_REFILTER; break;
		case '/': t->editing = true; ui->search[0] = 0; flags |= TOP_KEY_REDRAW; break;
		case 'p': case ' ': ui->paused = !ui->paused; flags |= TOP_KEY_REDRAW; break;
		case '\n': case KEY_ENTER: case KEY_RIGHT:
			ui->detail = !ui->detail;
			flags |= TOP_KEY_REDRAW;
			break;
		case 27: case KEY_LEFT: ui->detail = false; flags |= TOP_KEY_REDRAW; break;
		case KEY_UP: case 'k':
			if (ui->selected)
				ui->selected--;
			flags |= TOP_KEY_REDRAW;
			break;
		case KEY_DOWN: case 'j':
			if (ui->selected + 1 < s->nrows)
				ui->selected++;
			flags |= TOP_KEY_REDRAW;
			break;
		case KEY_RESIZE: flags |= TOP_KEY_REDRAW; break;
		default: break;
		}
	}
	return flags;
}

/* Print at Y, X, cut at the screen's right edge instead of wrapping. */
__attribute__((format(printf, 3, 4))) static void put(int y, int x, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (x < COLS)
		mvaddnstr(y, x, buf, COLS - x);
}

/* The same, after what the line has so far. */
__attribute__((format(printf, 1, 2))) static void put_more(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int x = getcurx(stdscr), y = getcury(stdscr);

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (x < COLS - 1)
		mvaddnstr(y, x, buf, COLS - 1 - x);
}

static const char *base_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static void bytes_str(uint64_t v, char *buf, size_t cap)
{
	format_bytes(v, buf, cap);
}

/* The live heap over the snapshots, newest at the right. */
static void draw_sparkline(const struct top_screen *t, const struct top_snapshot *s, int y)
{
	static const char *const blocks[] = { " ", "\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = " .:-=+*#%";
	int width = COLS - 18;
	size_t first = s->nhistory > (size_t)width ? s->nhistory - width : 0;
	uint64_t max = 0;
	char label[32];

	if (width < 8)
		return;
	for (size_t i = first; i < s->nhistory; i++)
		max = s->history[i] > max ? s->history[i] : max;
	bytes_str(max, label, sizeof(label));
	max = max ? max : 1;
	put(y, 0, "heap %11s ", label);
	attron(COLOR_PAIR(1));
	for (size_t i = first; i < s->nhistory; i++) {
		int level = (int)((s->history[i] * 8 + max - 1) / max);

		if (t->utf8)
			addstr(blocks[level]);
		else
			addch(ascii[level]);
	}
	attroff(COLOR_PAIR(1));
}

static void draw_header(const struct top_screen *t, const struct top_snapshot *s, const struct top_ui *ui)
{
	char live[32], change[32], rate[32];

	bytes_str(s->live_bytes, live, sizeof(live));
	bytes_str((uint64_t)(s->live_change < 0 ? -s->live_change : s->live_change), change, sizeof(change));
	bytes_str(s->bytes_per_s, rate, sizeof(rate));
	attron(A_BOLD);
	put(0, 0, "memtrace top  PID %d (%s)  %.1f s  %zu probes  %llu dropped%s", s->pid,
		 s->comm ? s->comm : "?", s->elapsed_ns / 1e9, s->probes, (unsigned long long)s->dropped,
		 s->target_exited ? "  [exited]" : "");
	if (s->budget)
		put_more("  --budget %g%%: %llu windows, %.1f%% live (estimates)", (double)s->budget->budget_ppm / 1e4,
			 (unsigned long long)s->budget->windows,
			 s->elapsed_ns ? 100.0 * (double)s->budget->live_ns / (double)s->elapsed_ns : 0.0);
	attroff(A_BOLD);
	put(1, 0, "live %s (%s%s)  %llu blocks  %llu allocs/s  %s/s", live, s->live_change < 0 ? "-" : "+",
		 change, (unsigned long long)s->live_allocations, (unsigned long long)s->allocs_per_s, rate);
	if (s->rss) {
		char res[32], anon[32];

		bytes_str(s->rss->anon + s->rss->file + s->rss->shmem, res, sizeof(res));
		bytes_str(s->rss->anon, anon, sizeof(anon));
		put_more("  resident %s (anon %s)", res, anon);
	}
	if (ui->paused)
		put_more("  [paused]");
	if (ui->thread >= 0 && (size_t)ui->thread < s->nthreads)
		put_more("  [thread %u %s]", s->threads[ui->thread].tid,
			 s->threads[ui->thread].name ? s->threads[ui->thread].name : "");
	if (ui->zone >= 0 && (size_t)ui->zone < s->nzones)
		put_more("  [zone %s]", s->zones[ui->zone]);
	if (ui->search[0] || t->editing)
		put_more("  [/%s%s]", ui->search, t->editing ? "_" : "");
	draw_sparkline(t, s, 2);
}

static void draw_table(struct top_screen *t, const struct top_snapshot *s, const struct top_ui *ui)
{
	static const char *const names[TOP_SORT_COUNT] = { "LIVE", "BLOCKS", "ALLOCATED", "CALLS", "RATE/S" };
	int rows = LINES - HEADER_LINES - 1;
	char cells[5][32];

	attron(COLOR_PAIR(2) | A_BOLD);
	move(3, 0);
	for (int i = 0; i < TOP_SORT_COUNT; i++)
		put_more("%c%9s ", ui->sort == (enum top_sort)i ? '>' : ' ', names[i]);
	put_more(" SITE");
	for (int x = getcurx(stdscr); x < COLS - 1; x++)
		addch(' ');
	attroff(COLOR_PAIR(2) | A_BOLD);
	if (rows < 1)
		return;
	if (ui->selected < t->top)
		t->top = ui->selected;
	if (ui->selected >= t->top + (size_t)rows)
		t->top = ui->selected - rows + 1;
	for (int r = 0; r < rows && t->top + r < s->nrows; r++) {
		const struct top_row *row = &s->rows[t->top + r];
		const struct analysis_figures *f = &row->site->figures;
		bool sel = t->top + r == ui->selected;

		bytes_str(f->leaked_bytes, cells[0], sizeof(cells[0]));
		snprintf(cells[1], sizeof(cells[1]), "%llu", (unsigned long long)f->leaked_allocations);
		bytes_str(f->allocated_bytes, cells[2], sizeof(cells[2]));
		snprintf(cells[3], sizeof(cells[3]), "%llu", (unsigned long long)f->allocations);
		bytes_str(row->bytes_per_s, cells[4], sizeof(cells[4]));
		if (sel)
			attron(A_REVERSE);
		put(HEADER_LINES + r, 0, " %9s  %9s  %9s  %9s  %9s  %s", cells[0], cells[1], cells[2],
		    cells[3], cells[4], row->site->name);
		if (row->site->file)
			put_more("  %s:%u", base_of(row->site->file), row->site->line);
		if (row->site->module)
			put_more("  [%s]", base_of(row->site->module));
		if (sel) {
			for (int x = getcurx(stdscr); x < COLS - 1; x++)
				addch(' ');
			attroff(A_REVERSE);
		}
	}
	if (!s->nrows)
		put(HEADER_LINES, 1, "no allocations%s yet", ui->search[0] ? " match the search" : "");
}

/* The selected site's stacks, largest first, each frame on a line. */
static void draw_detail(const struct top_snapshot *s, const struct top_ui *ui)
{
	const struct analysis_site *site;
	int y = HEADER_LINES;

	if (ui->selected >= s->nrows)
		return;
	site = s->rows[ui->selected].site;
	attron(A_BOLD);
	put(3, 0, "stacks of %s (%zu)  Enter or Esc: back", site->name, site->nstacks);
	attroff(A_BOLD);
	for (size_t i = 0; i < site->nstacks && y < LINES - 1; i++) {
		const struct analysis_stack *st = site->stacks[i];
		char allocated[32], live[32];

		bytes_str(st->figures.allocated_bytes, allocated, sizeof(allocated));
		bytes_str(st->figures.leaked_bytes, live, sizeof(live));
		put(y++, 0, "%s in %llu calls, %s live", allocated, (unsigned long long)st->figures.allocations,
		    live);
		for (size_t k = 0; k < st->nframes && y < LINES - 1; k++) {
			const struct analysis_frame *f = &st->frames[k];

			put(y++, 2, "#%-2zu %s", k, f->function ? f->function : "??");
			if (f->file)
				put_more("  %s:%u", base_of(f->file), f->line);
			else if (f->module)
				put_more("  %s+0x%llx", base_of(f->module), (unsigned long long)f->module_offset);
		}
	}
}

void top_screen__draw(struct top_screen *t, const struct top_snapshot *s, const struct top_ui *ui)
{
	erase();
	draw_header(t, s, ui);
	if (ui->detail)
		draw_detail(s, ui);
	else
		draw_table(t, s, ui);
	attron(A_DIM);
	put(LINES - 1, 0, "q quit  1-5/s sort  t thread  z zone  / search  Enter stacks  p pause");
	attroff(A_DIM);
	refresh();
}

void top_screen__wait(struct top_screen *t, const struct top_snapshot *s, struct top_ui *ui,
		      const char *footer, volatile const int *stop)
{
	nodelay(stdscr, FALSE);
	halfdelay(2); /* getch returns every 0.2 s, so a signal is seen */
	while (!ui->quit && !*stop) {
		top_screen__draw(t, s, ui);
		if (footer) {
			attron(A_REVERSE);
			put(LINES - 1, 0, "%s", footer);
			attroff(A_REVERSE);
			refresh();
		}
		top_screen__keys(t, ui, s);
	}
}
