/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// The page's entry: mounts the shell (shell.tsx) into <main>. Styles are bundled from app.css.
import { render } from 'preact';
import { Shell } from './shell';
import './app.css';

const root = document.getElementById('app');
if (root) render(<Shell />, root);
