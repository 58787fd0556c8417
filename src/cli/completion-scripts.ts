// The scripts `unkey-infra completion bash|zsh|fish` prints. Each is a thin adapter: it passes
// the command line up to the cursor to `unkey-infra __complete` (the same binary the user typed)
// and turns the answer (completion.ts's formatCompletion: a head line `:directive<TAB>token`,
// then `value<TAB>description` lines) into the shell's own candidates, so what completes is
// decided once, in TypeScript, and tested there and in each real shell.

export const SHELLS = ['bash', 'zsh', 'fish'] as const;

/** The scripts are written with `@{` for the shells' `${` (a template literal would take `${` as
 *  its own); nothing in them is interpolated. */
const script = (s: TemplateStringsArray): string => s.raw.join('').replaceAll('@{', '${');
export type Shell = (typeof SHELLS)[number];

const BASH = script`# bash completion for unkey-infra. Load it in this shell:  source <(unkey-infra completion bash)
# or for every shell:  unkey-infra completion bash > /etc/bash_completion.d/unkey-infra
_unkey_infra() {
  local cur=@{COMP_WORDS[COMP_CWORD]} out head directive token prefix body c
  out=$("@{COMP_WORDS[0]}" __complete "@{COMP_LINE:0:COMP_POINT}" 2>/dev/null) || return 0
  head=@{out%%$'\n'*}
  directive=@{head%%$'\t'*}
  token=@{head#*$'\t'}
  body=
  [[ $out == *$'\n'* ]] && body=@{out#*$'\n'}
  COMPREPLY=()
  while IFS= read -r c; do
    [[ -n $c ]] && COMPREPLY+=("@{c%%$'\t'*}")
  done <<<"$body"
  # bash splits words at = and : (COMP_WORDBREAKS) and candidates replace the whole token, so
  # the part of the token before bash's current word is cut from each.
  prefix=@{token%"$cur"}
  if [[ -n $prefix && @{#COMPREPLY[@]} -gt 0 ]]; then COMPREPLY=("@{COMPREPLY[@]#"$prefix"}"); fi
  if (( @{#COMPREPLY[@]} == 0 )); then
    case $directive in
      :files) compopt -o default 2>/dev/null ;;
      :dirs) compopt -o dirnames 2>/dev/null ;;
    esac
  fi
}
complete -F _unkey_infra unkey-infra
`;

const ZSH = script`#compdef unkey-infra
# zsh completion for unkey-infra. Load it in this shell:  source <(unkey-infra completion zsh)
# or install it as _unkey-infra in a directory of $fpath (after compinit).
compdef _unkey_infra unkey-infra

_unkey_infra() {
  local out directive line c
  local -a lines described
  out=$("@{words[1]}" __complete "@{BUFFER[1,CURSOR]}" 2>/dev/null) || return 1
  lines=("@{(@f)out}")
  directive=@{lines[1]%%$'\t'*}
  for line in "@{(@)lines[2,-1]}"; do
    [[ -z $line ]] && continue
    c=@{line%%$'\t'*}
    # _describe reads NAME:DESCRIPTION; a colon in the name is escaped.
    if [[ $line == *$'\t'* ]]; then described+=("@{c//:/\\:}:@{line#*$'\t'}"); else described+=("@{c//:/\\:}"); fi
  done
  if (( @{#described} )); then
    _describe 'unkey-infra' described
  elif [[ $directive == :files ]]; then
    _files
  elif [[ $directive == :dirs ]]; then
    _files -/
  fi
}

# Autoloaded from $fpath, the file's body runs on each completion: complete now.
if [[ "@{funcstack[1]}" == _unkey_infra || "@{funcstack[1]}" == _unkey-infra ]]; then
  _unkey_infra "$@"
fi
`;

const FISH = script`# fish completion for unkey-infra. Load it in this shell:  unkey-infra completion fish | source
# or for every shell:  unkey-infra completion fish > ~/.config/fish/completions/unkey-infra.fish
function __unkey_infra_complete
    set -l cmd (commandline -opc)[1]
    set -l out ($cmd __complete (commandline -cp) 2>/dev/null)
    or return
    set -l directive (string split -m1 \t -- $out[1])[1]
    if test (count $out) -gt 1
        printf '%s\n' $out[2..-1]
        return
    end
    switch $directive
        case :files
            __fish_complete_path (commandline -ct)
        case :dirs
            __fish_complete_directories (commandline -ct)
    end
end
complete -c unkey-infra -f -a '(__unkey_infra_complete)'
`;

export const COMPLETION_SCRIPTS: Record<Shell, string> = { bash: BASH, zsh: ZSH, fish: FISH };
