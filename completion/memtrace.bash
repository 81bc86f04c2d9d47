# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bash completion for memtrace; make install puts it in
# $(PREFIX)/share/bash-completion/completions/memtrace.

_memtrace()
{
	local cur prev cmd i
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	local commands="record report diff export top agent help"

	# the command: the first word after memtrace that is one
	cmd=""
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		record | report | diff | export | top | agent | help) cmd=${COMP_WORDS[i]}; break ;;
		--) cmd=record; break ;;
		esac
	done
	# after "--" comes a command line: complete commands, then files
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [ "${COMP_WORDS[i]}" = "--" ]; then
			if [ "$i" = $((COMP_CWORD - 1)) ]; then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	done

	case $prev in
	-p | --pid)
		COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur"))
		return ;;
	--format)
		COMPREPLY=($(compgen -W "pprof folded chrome" -- "$cur"))
		return ;;
	--metric)
		COMPREPLY=($(compgen -W "allocated leaked peak allocations leaked-allocations" -- "$cur"))
		return ;;
	-o | --output | --html | --lib)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-d | --duration | --stack-depth | --unwind-rows | --buffer-size | --top | --alloc-fn | -i | --interval)
		return ;;
	esac

	case $cmd in
	"")
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version -V -p --pid -o --output -d --duration" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		fi ;;
	help)
		COMPREPLY=($(compgen -W "record report diff export top agent" -- "$cur")) ;;
	record)
		COMPREPLY=($(compgen -W "-p --pid -o --output -d --duration --lib --stack-depth --unwind-rows
			--sample= --budget --rss --rss=only --buffer-size --follow-children --preload -v --verbose -h --help --" -- "$cur")) ;;
	top)
		COMPREPLY=($(compgen -W "-p --pid -i --interval -o --output -d --duration --budget --rss --rss=only --batch --json --top
			--alloc-fn -h --help --" -- "$cur")) ;;
	agent)
		COMPREPLY=($(compgen -W "-p --pid --comm --exe --cgroup --user --per-user --show-cmdline -d --duration --budget
			--exact --rss --listen --alloc-fn -o --output --rotate --keep --max-bytes --oom-dir -h --help" -- "$cur")) ;;
	report)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json --html --top --alloc-fn --strict --symfs -h --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -X '!*.mtrace' -- "$cur") $(compgen -d -- "$cur"))
		fi ;;
	diff)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json --html --top --fail-on-growth= --alloc-fn --strict --symfs -h --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -X '!*.mtrace' -- "$cur") $(compgen -d -- "$cur"))
		fi ;;
	export)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--format --metric -o --alloc-fn --strict --symfs -h --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -X '!*.mtrace' -- "$cur") $(compgen -d -- "$cur"))
		fi ;;
	esac
}
complete -F _memtrace memtrace
